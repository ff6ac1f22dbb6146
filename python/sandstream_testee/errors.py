"""Errors as they cross the testee protocol (spec 1.3, section 18.4).

An error of the contract travels with ``name`` (the class name, which the
Python classes share with the TypeScript ones), ``message``, ``code`` and the
fields of its class under the spec's names, so the kit rebuilds the same
class. Anything else travels with no ``code``: no case accepts it, which is
right, since it is not the contract's.
"""

from __future__ import annotations

import traceback
from typing import Any

from sandstream import AbortError, CallbackFailed, ExecResult, SandstreamError, SpawnFailed

from .values import UNDEFINED, encode_result, encode_value

__all__ = ["CallbackThrew", "ProtocolMisuse", "encode_error"]

# How deep causes are followed: a cycle of causes must not hang the encoder.
_MAX_DEPTH = 4


class CallbackThrew(Exception):
    """What a stand-in for a callback the kit marked as throwing raises (SS-TESTEE-8).

    ``callback`` is the kit's id of that callback: the kit puts back what its
    own callback threw in place of this error.
    """

    def __init__(self, callback: str) -> None:
        super().__init__("the callback threw")
        self.callback = callback


class ProtocolMisuse(Exception):
    """A request the kit got wrong (an unknown id or op): answered as an error with no code."""


def _text(item: str | bytes) -> str:
    return item.decode("utf-8", "replace") if isinstance(item, bytes) else item


def encode_error(error: object, depth: int = 0) -> dict[str, Any]:
    """What was raised, as a ``WireError``: ``name``, ``message``, and for the contract's, ``code`` and fields."""
    if not isinstance(error, BaseException):
        # A cause that is no exception (an abort reason): carried as the value it is.
        return {"name": "NonError", "message": str(error), "thrown": encode_value(error)}
    out: dict[str, Any] = {"name": type(error).__name__, "message": _message(error)}
    cause: object = error.__cause__
    if isinstance(error, SandstreamError):
        out["code"] = error.code
        for attribute, key in (("key", "key"), ("reason", "reason"), ("capability", "capability"),
                               ("operation", "operation"), ("command_id", "commandId")):
            value = getattr(error, attribute, None)
            # SpawnFailed's reason is part of its message, not a field of the spec's class.
            if isinstance(value, str) and not (key == "reason" and isinstance(error, SpawnFailed)):
                out[key] = value
        if isinstance(error, SpawnFailed):
            out["argv"] = [_text(item) for item in error.argv]
        if isinstance(error, (AbortError, CallbackFailed)) and isinstance(error.result, ExecResult):
            out["result"] = encode_result(error.result)
        cause = error.cause
    elif error.__traceback__ is not None:
        # Not the contract's: where it was raised is what its reader needs (a bug, not an outcome).
        out["stack"] = "".join(traceback.format_exception(error, chain=False)).rstrip()
    if isinstance(error, CallbackThrew):
        out["callback"] = error.callback
    if depth < _MAX_DEPTH and cause is not None and cause is not UNDEFINED:
        out["cause"] = encode_error(cause, depth + 1)
    return out


def _message(error: BaseException) -> str:
    if isinstance(error, SandstreamError):
        return error.message
    text = str(error)
    return text if text else type(error).__name__
