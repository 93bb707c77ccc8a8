"""Who may see the dashboard: one-time codes exchanged for session cookies.

``lease-manager dashboard`` asks the daemon for a code with the API token (``POST
/v1/dashboard/code``) and prints a URL that carries it. The first ``GET /dashboard?code=...``
within :attr:`DashboardAccess.code_seconds` spends the code and gets a session cookie
(HttpOnly, SameSite=Strict) and a redirect to the URL without it: the token never travels in
a URL, and a code that was logged or kept in a browser's history is already spent. Codes and
sessions are kept only as SHA-256 digests, in memory: a restarted daemon forgets them.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections.abc import Callable

#: the cookie's name ends with the daemon's port: two daemons on one host keep theirs apart
COOKIE_PREFIX = "lm_dashboard_"


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


class DashboardAccess:
    """One-time codes and the sessions they become (any thread)."""

    def __init__(self, *, code_seconds: float = 60.0, session_seconds: float = 12 * 3600.0,
                 most: int = 256, clock: Callable[[], float] = time.monotonic) -> None:
        #: how long a code may wait before it is spent
        self.code_seconds = code_seconds
        #: how long a session lasts after its last request
        self.session_seconds = session_seconds
        #: at most this many codes, and this many sessions, are kept (the oldest go first)
        self.most = most
        self._clock = clock
        self._lock = threading.Lock()
        self._codes: dict[str, float] = {}       # digest -> expiry
        self._sessions: dict[str, float] = {}    # digest -> expiry

    def new_code(self) -> str:
        """A fresh one-time code."""
        code = secrets.token_urlsafe(24)
        with self._lock:
            self._forget(self._codes)
            self._codes[_digest(code)] = self._clock() + self.code_seconds
        return code

    def redeem(self, code: str) -> str | None:
        """Spend ``code``: a new session id, or None if the code is unknown, spent or late."""
        if not code or len(code) > 200:
            return None
        with self._lock:
            expiry = self._codes.pop(_digest(code), None)
            if expiry is None or expiry < self._clock():
                return None
            session = secrets.token_urlsafe(32)
            self._forget(self._sessions)
            self._sessions[_digest(session)] = self._clock() + self.session_seconds
        return session

    def valid(self, session: str | None) -> bool:
        """Whether ``session`` is a live session (its life is extended)."""
        if not session or len(session) > 200:
            return False
        key = _digest(session)
        now = self._clock()
        with self._lock:
            expiry = self._sessions.get(key)
            if expiry is None:
                return False
            if expiry < now:
                del self._sessions[key]
                return False
            self._sessions[key] = now + self.session_seconds
        return True

    def _forget(self, table: dict[str, float]) -> None:
        """Drop what expired, and the oldest while the table is full (lock held)."""
        now = self._clock()
        for key in [k for k, expiry in table.items() if expiry < now]:
            del table[key]
        while len(table) >= self.most:
            del table[min(table, key=table.__getitem__)]
