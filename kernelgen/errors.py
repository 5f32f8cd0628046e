"""Errors that kernelgen reports to its users.

Every failure a user can cause is a :class:`KernelgenError` subclass. Its message is one line
meant for a person; the CLI prints it without a traceback. A usage error (a bad option value,
such as an op name or an expression) is a :class:`SpecError`, which the CLI reports as a usage
error with exit code 2. Everything else exits with code 1.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class KernelgenError(Exception):
    """Base class: a failure with a one-line message meant for the user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class SpecError(KernelgenError):
    """An option value that describes an impossible or unsafe op (exit code 2)."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class InvalidNameError(SpecError):
    """An op, namespace or input name that cannot be used as a Python and C++ identifier."""


class ExprError(SpecError):
    """An elementwise expression outside the whitelist, or one that cannot be evaluated."""


class DestinationError(KernelgenError):
    """The output directory cannot be written (exists and is not empty, or is a file)."""


class RenderError(KernelgenError):
    """The template failed to render; nothing was written to the destination."""


class AnswersError(KernelgenError):
    """A recorded answers file (.copier-answers.yml) is missing or unreadable."""


class ConflictError(KernelgenError):
    """Adding an op would leave conflict markers in files the user edited; nothing was written."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'sigmoid'?"`` for the choice closest to ``word`` (difflib's ratio of at least
    0.6), or ``""`` when none is close: the tail of a one-line error about an unknown name."""
    matches = difflib.get_close_matches(word, sorted(set(choices)), n=1)
    return f"; did you mean {matches[0]!r}?" if matches else ""


def clip(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters (ending in "...") to quote it in a one-line message."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
