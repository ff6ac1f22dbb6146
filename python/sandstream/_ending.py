"""How a command ended: its exit status, and why the runtime ended it when it did not end by itself."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from .errors import AbortError, CallbackFailed
from .results import ExecResult

#: (exit code, signal name): one of them set, or both None when no status was reported.
Status = tuple[int | None, str | None]


@dataclass(frozen=True, slots=True)
class Ending:
    """Why the runtime ended a command: the first reason wins, but a failure replaces any.

    ``cause`` is the abort's reason, what the callback raised, or the failure.
    ``started`` is False for an abort that came before anything started.
    """

    kind: Literal["timed-out", "aborted", "callback-failed", "failed"]
    cause: object = None
    started: bool = True


def ending_error(ending: Ending | None, result: Callable[[], ExecResult]) -> BaseException | None:
    """The error a command that ended this way raises instead of its result (a timeout is a result flag)."""
    if ending is None or ending.kind == "timed-out":
        return None
    if ending.kind == "failed":
        assert isinstance(ending.cause, BaseException)
        return ending.cause
    if ending.kind == "aborted":
        return AbortError(result() if ending.started else None, cause=ending.cause)
    return CallbackFailed(result(), cause=ending.cause)


def signal_name(number: int) -> str:
    """``SIGTERM`` for 15; a real-time signal without a name of its own is ``SIG<number>``."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"SIG{number}"


def status_of(wait_status: int) -> Status:
    """The exit code xor the signal of a wait status; never an invented code for a signal."""
    if os.WIFSIGNALED(wait_status):
        return None, signal_name(os.WTERMSIG(wait_status))
    if os.WIFEXITED(wait_status):
        return os.WEXITSTATUS(wait_status), None
    return None, None
