"""Errors that are the user's to fix, reported as one clear line."""

from __future__ import annotations


class LeaseManagerError(Exception):
    """Base class of every error lease_manager reports to a user without a traceback."""


class InputError(LeaseManagerError):
    """Bad user input: names the file, the line and the field when they are known."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        # one line, whatever the message quotes (an XML parser's excerpt of the document...)
        message = " ".join(message.split()) if "\n" in message or "\r" in message else message
        self.file = file
        self.line = line
        self.field = field
        self.detail = message
        where = ""
        if file is not None:
            where = str(file)
            if line is not None:
                where += f":{line}"
            where += ": "
        if field is not None:
            message = f"{field}: {message}"
        super().__init__(where + message)


class ConfigError(InputError):
    """An invalid configuration file or command-line override."""


class ConfigErrors(ConfigError):
    """Every error of a configuration file, one line each (``FILE:LINE: [section] option:
    message``); as a :class:`ConfigError` it is the first of them."""

    def __init__(self, errors: list[ConfigError]) -> None:
        first = errors[0]
        super().__init__(first.detail, file=first.file, line=first.line, field=first.field)
        self.errors = errors

    def __str__(self) -> str:
        return "\n".join(str(e) for e in self.errors)


def all_errors(errors: list[ConfigError]) -> ConfigError:
    """One error as itself, several as :class:`ConfigErrors` (in the file's order)."""
    if len(errors) == 1:
        return errors[0]
    return ConfigErrors(sorted(errors, key=lambda e: (e.file == "--set", e.line or 0)))


class TraceError(InputError):
    """A malformed workload trace."""


class IllegalTransition(LeaseManagerError):
    """A lease was asked to move between two states that are not connected."""


class OvercommitError(LeaseManagerError):
    """A reservation would use more of a resource than a node (or the site) has."""
