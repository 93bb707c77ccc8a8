"""Which format a trace file is in, read from its first bytes, without loading a reader
(the LWF reader makes an attrs class at import: an SWF replay does not need it)."""

from __future__ import annotations

import zlib
from pathlib import Path


def is_lwf(path: str | Path) -> bool:
    """True if ``path`` looks like an XML (LWF) file rather than SWF: its first non-blank
    character, after decompressing a ``.gz`` file, is ``<``."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(4096)
        # the start of a .gz, decompressed as far as it goes (a truncated file too)
        start = (zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, 512)
                 if data[:2] == b"\x1f\x8b" else data[:512])
    except (OSError, zlib.error):
        return False
    return start.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<")
