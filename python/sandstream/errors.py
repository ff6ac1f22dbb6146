"""The errors of the contract (spec section 14), one class per stable ``code``.

Match on ``code`` (or the class), never on messages. Every class has a
``to_wire()`` giving the JSON form a testee sends: ``code``, ``message`` and
the fields the class carries, under the spec's names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .results import ExecResult

__all__ = [
    "SandstreamError",
    "CapabilityNotSupported",
    "InvalidArgument",
    "InvalidState",
    "AbortError",
    "SpawnFailed",
    "StdinClosed",
    "CallbackFailed",
    "TransportError",
    "CommandNotFound",
    "SandboxClosed",
]


def _text(value: str | bytes) -> str:
    """An argv element as JSON can carry it: bytes decoded, invalid UTF-8 replaced."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


class SandstreamError(Exception):
    """Base class of every error the contract defines; ``code`` is stable within a major version."""

    code: str = ""

    def __init__(self, message: str, *, cause: object = None) -> None:
        super().__init__(message)
        self.message = message
        # The spec's `cause` may be any value (an abort reason); Python chains only exceptions.
        self._cause = cause
        if isinstance(cause, BaseException):
            self.__cause__ = cause

    @property
    def cause(self) -> object:
        """The spec's ``cause``: what led to this error (also ``__cause__`` when an exception)."""
        return self._cause

    def _wire_fields(self) -> dict[str, Any]:
        return {}

    def to_wire(self) -> dict[str, Any]:
        """The error as JSON: ``{"code", "message", ...the fields it carries}``."""
        return {"code": self.code, "message": self.message, **self._wire_fields()}


class CapabilityNotSupported(SandstreamError):
    """The sandbox does not advertise the capability this operation needs; nothing was started."""

    code = "CAPABILITY_NOT_SUPPORTED"

    def __init__(self, capability: str, operation: str) -> None:
        super().__init__(
            f'{operation} needs the "{capability}" capability, which this sandbox does not support'
        )
        self.capability = capability
        self.operation = operation

    def _wire_fields(self) -> dict[str, Any]:
        return {"capability": self.capability, "operation": self.operation}


class InvalidArgument(SandstreamError, ValueError):
    """An argument or option is malformed; ``key`` names it (``argv[2]``, ``options.timeout``).

    Keys use the spec's option names (``options.maxOutputBytes``), so they read
    the same in every language.
    """

    code = "INVALID_ARGUMENT"

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason

    def _wire_fields(self) -> dict[str, Any]:
        return {"key": self.key, "reason": self.reason}


class InvalidState(SandstreamError):
    """The object does not allow the call now (a Process iterated a second time)."""

    code = "INVALID_STATE"


class AbortError(SandstreamError):
    """The caller's abort signal fired and the command was terminated.

    ``result`` holds what the command produced until it was gone, or is
    ``None`` when the signal had fired before anything started. ``cause`` is
    the signal's reason.
    """

    code = "ABORTED"

    def __init__(self, result: ExecResult | None, *, cause: object = None) -> None:
        super().__init__("the command was aborted by its abort signal", cause=cause)
        self.result = result

    def _wire_fields(self) -> dict[str, Any]:
        return {} if self.result is None else {"result": self.result.to_wire()}


class SpawnFailed(SandstreamError):
    """The command could not be started (no such program, not executable, no such cwd, no room)."""

    code = "SPAWN_FAILED"

    def __init__(self, argv: Sequence[str | bytes], reason: str, *, cause: object = None) -> None:
        program = _text(argv[0]) if argv else ""
        super().__init__(f'could not start "{program}": {reason}', cause=cause)
        self.argv = tuple(argv)
        self.reason = reason

    def _wire_fields(self) -> dict[str, Any]:
        return {"argv": [_text(item) for item in self.argv]}


class StdinClosed(SandstreamError):
    """Standard input is known to be closed: ended, or the command exited or stopped reading."""

    code = "STDIN_CLOSED"


class CallbackFailed(SandstreamError):
    """The ``on_output`` callback of ``run()`` raised; the command was terminated.

    ``result`` holds the output captured until the command was gone; ``cause``
    is what the callback raised.
    """

    code = "CALLBACK_FAILED"

    def __init__(self, result: ExecResult | None, *, cause: object = None) -> None:
        super().__init__("the on_output callback raised; the command was terminated", cause=cause)
        self.result = result

    def _wire_fields(self) -> dict[str, Any]:
        return {} if self.result is None else {"result": self.result.to_wire()}


class TransportError(SandstreamError):
    """The command's end could not be confirmed, or a signal could not be delivered.

    The command's state is unknown. ``command_id`` names a background command
    the error concerns (never set by this adapter, which has none).
    """

    code = "TRANSPORT"

    def __init__(
        self, message: str, *, cause: object = None, command_id: str | None = None
    ) -> None:
        super().__init__(message, cause=cause)
        self.command_id = command_id

    def _wire_fields(self) -> dict[str, Any]:
        return {} if self.command_id is None else {"commandId": self.command_id}


class CommandNotFound(SandstreamError):
    """No background command of this sandbox has the id given to ``attach()``."""

    code = "COMMAND_NOT_FOUND"

    def __init__(self, command_id: str) -> None:
        super().__init__(f'no background command "{command_id}" in this sandbox')
        self.command_id = command_id

    def _wire_fields(self) -> dict[str, Any]:
        return {"commandId": self.command_id}


class SandboxClosed(SandstreamError):
    """The sandbox was closed; it accepts no new commands."""

    code = "SANDBOX_CLOSED"

    def __init__(self) -> None:
        super().__init__("the sandbox is closed")
