"""The value form of the testee protocol (spec 1.3, section 18.3), read and written in Python.

JSON values are themselves; what JSON cannot carry is a one-key object whose
key begins with ``$``. The kit sends the caller's arguments as the caller
gave them, invalid ones included, so decoding never judges a value: what has
no Python counterpart becomes an object of its own type (``Other``,
``JsBigInt``) that the adapter refuses wherever it expects something else.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable, Mapping
from typing import Any

from sandstream import ExecResult, OutputChunk, Termination

__all__ = ["UNDEFINED", "Other", "JsBigInt", "Makers", "decode_value", "encode_value", "encode_result"]

#: A JSON value as ``json`` reads and writes it.
Json = Any


class _Undefined:
    """JavaScript's ``undefined``: an absent option, a missing property (a singleton)."""

    _instance: _Undefined | None = None

    def __new__(cls) -> _Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "undefined"

    def __bool__(self) -> bool:
        return False


UNDEFINED = _Undefined()


class Other:
    """A value of a type no adapter accepts (a JavaScript symbol): carried, never accepted."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"<other {self.text}>"


class JsBigInt:
    """A JavaScript bigint: not a number to a JavaScript adapter, so not an ``int`` here either."""

    __slots__ = ("digits",)

    def __init__(self, digits: str) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"{self.digits}n"


class Makers:
    """What the decoder builds for the forms only the kit's side holds: callbacks and abort signals."""

    def __init__(self, function: Callable[[str, bool], Callable[..., Any]],
                 signal: Callable[[str, bool, object], object]) -> None:
        self.function = function
        self.signal = signal


#: The largest integer a JavaScript number holds exactly (``Number.MAX_SAFE_INTEGER``).
MAX_SAFE_INTEGER = 2**53 - 1


def decode_value(wire: Json, makers: Makers | None = None) -> object:
    """Reads a value in the value form; ``$function`` and ``$signal`` need ``makers``."""
    if isinstance(wire, int) and not isinstance(wire, bool) and abs(wire) > MAX_SAFE_INTEGER:
        # A JavaScript number is a double: beyond the safe integers it is no exact integer
        # (2**53 + 1 reads as 2**53), so it is the float it was, which an integer option refuses.
        return float(wire)
    if isinstance(wire, list):
        return [decode_value(item, makers) for item in wire]
    if not isinstance(wire, dict):
        return wire
    form = next((key for key in wire if isinstance(key, str) and key.startswith("$")), None)
    if form is None:
        return {key: decode_value(item, makers) for key, item in wire.items()}
    body = wire[form]
    if form == "$bytes":
        return base64.b64decode(str(body))
    if form == "$undefined":
        return UNDEFINED
    if form == "$number":
        return float({"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}.get(str(body), "nan"))
    if form == "$bigint":
        return JsBigInt(str(body))
    if form == "$other":
        return Other(str(body))
    if form == "$object":
        return {key: decode_value(item, makers) for key, item in dict(body).items()}
    if form == "$function":
        if makers is None:
            return Other("a function")
        return makers.function(str(body), wire.get("throws") is True)
    if form == "$signal":
        if makers is None:
            return Other("an AbortSignal")
        return makers.signal(str(body), wire.get("aborted") is True, decode_value(wire.get("reason")))
    raise ValueError(f"unknown value form {form!r}")


def encode_result(result: ExecResult) -> dict[str, Json]:
    """An ``ExecResult`` with the spec's camelCase field names, its output as ``$bytes``."""
    return {
        "exitCode": result.exit_code,
        "signal": result.signal,
        "stdout": _bytes(result.stdout),
        "stderr": _bytes(result.stderr),
        "streamed": result.streamed,
        "timedOut": result.timed_out,
        "stdoutTruncated": result.stdout_truncated,
        "stderrTruncated": result.stderr_truncated,
        "durationMs": encode_value(result.duration_ms),
    }


def _bytes(data: bytes | bytearray | memoryview) -> dict[str, str]:
    return {"$bytes": base64.b64encode(bytes(data)).decode("ascii")}


def encode_value(value: object) -> Json:
    """Writes ``value`` in the value form. Never raises: what it cannot carry becomes ``$other``."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"$number": "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")}
    if value is UNDEFINED:
        return {"$undefined": True}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _bytes(value)
    if isinstance(value, ExecResult):
        return encode_result(value)
    if isinstance(value, OutputChunk):
        return {"stream": value.stream, "data": _bytes(value.data)}
    if isinstance(value, Termination):
        return {"graceMs": encode_value(value.grace_ms), "killWaitMs": encode_value(value.kill_wait_ms),
                "ownerLossMs": encode_value(value.owner_loss_ms)}
    if isinstance(value, Other):
        return {"$other": value.text}
    if isinstance(value, JsBigInt):
        return {"$bigint": value.digits}
    if isinstance(value, (list, tuple)):
        return [encode_value(item) for item in value]
    if isinstance(value, Mapping):
        out = {str(key): encode_value(item) for key, item in value.items()}
        return {"$object": out} if any(key.startswith("$") for key in out) else out
    if isinstance(value, BaseException):
        return {"$other": f"{type(value).__name__}: {value}"}
    return {"$other": repr(value)}
