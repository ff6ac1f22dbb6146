"""What a command produces: ``OutputChunk`` while it runs, ``ExecResult`` at its end.

Output is bytes, exactly as the command wrote it (spec section 8.1); text is
a view decoded on demand. ``to_wire()`` / ``from_wire()`` give the JSON forms
of the spec's ``schema.json`` (section 2.7): bytes as canonical padded base64.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from .errors import InvalidArgument

__all__ = ["OutputChunk", "ExecResult", "StreamName", "bytes_to_base64", "base64_to_bytes"]

StreamName = Literal["stdout", "stderr"]
STREAM_NAMES: tuple[StreamName, ...] = ("stdout", "stderr")
_SIGNAL_NAME = re.compile(r"^SIG[A-Z0-9]+\Z")


def bytes_to_base64(data: bytes) -> str:
    """Canonical, padded RFC 4648 base64, as the wire forms carry bytes."""
    return base64.b64encode(data).decode("ascii")


def base64_to_bytes(text: object, key: str) -> bytes:
    """Decodes canonical base64; anything else raises ``InvalidArgument`` naming ``key``."""
    if not isinstance(text, str):
        raise InvalidArgument(key, "must be a base64 string")
    try:
        data = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as error:
        raise InvalidArgument(key, f"is not base64: {error}") from None
    # One encoding per byte string: padding present and the pad bits zero.
    if bytes_to_base64(data) != text:
        raise InvalidArgument(key, "is not canonical padded base64")
    return data


def _decode_text(data: bytes) -> str:
    # Python's "replace" substitutes each maximal invalid subpart, as the
    # WHATWG decoder does; a leading byte-order mark is kept ("utf-8", not "utf-8-sig").
    return data.decode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class OutputChunk:
    """One piece of a command's output, tagged with the stream it came from.

    Chunk boundaries carry no meaning; order holds within a stream, never
    between the two (SS-ORDER-1).
    """

    stream: StreamName
    data: bytes

    def to_wire(self) -> dict[str, str]:
        """``{"stream": ..., "data": <base64>}``."""
        return {"stream": self.stream, "data": bytes_to_base64(self.data)}

    @classmethod
    def from_wire(cls, value: object) -> OutputChunk:
        """Validates a chunk's wire form and decodes it; raises ``InvalidArgument`` (key ``chunk/...``)."""
        fields = _object(value, "chunk", ("stream", "data"))
        stream = fields["stream"]
        if stream not in STREAM_NAMES:
            raise InvalidArgument("chunk/stream", 'must be "stdout" or "stderr"')
        return cls(stream, base64_to_bytes(fields["data"], "chunk/data"))


@dataclass(frozen=True)
class ExecResult:
    """The terminal outcome of a command (spec section 2.5).

    ``exit_code`` xor ``signal`` says how it ended (both ``None`` only when no
    status was ever reported). A result of ``stream()`` has ``streamed=True``
    and empty ``stdout``/``stderr``: the bytes were delivered through iteration.
    ``duration_ms`` runs from the start request to the reported end.
    """

    exit_code: int | None = None
    signal: str | None = None
    stdout: bytes = b""
    stderr: bytes = b""
    streamed: bool = False
    timed_out: bool = False
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    duration_ms: float = 0.0

    @cached_property
    def stdout_text(self) -> str:
        """``stdout`` decoded as UTF-8, invalid sequences replaced by U+FFFD."""
        return _decode_text(self.stdout)

    @cached_property
    def stderr_text(self) -> str:
        """``stderr`` decoded as UTF-8, invalid sequences replaced by U+FFFD."""
        return _decode_text(self.stderr)

    def to_wire(self) -> dict[str, Any]:
        """The nine fields of the spec's ``ExecResult`` schema, output in base64."""
        return {
            "exitCode": self.exit_code,
            "signal": self.signal,
            "stdout": bytes_to_base64(self.stdout),
            "stderr": bytes_to_base64(self.stderr),
            "streamed": self.streamed,
            "timedOut": self.timed_out,
            "stdoutTruncated": self.stdout_truncated,
            "stderrTruncated": self.stderr_truncated,
            "durationMs": self.duration_ms,
        }

    @classmethod
    def from_wire(cls, value: object) -> ExecResult:
        """Validates a result's wire form (the exact schema and its invariants) and decodes it.

        Raises ``InvalidArgument`` whose key is ``result`` followed by the JSON
        Pointer of the first problem (``result/exitCode``).
        """
        names = ("exitCode", "signal", "stdout", "stderr", "streamed", "timedOut",
                 "stdoutTruncated", "stderrTruncated", "durationMs")
        fields = _object(value, "result", names)
        code = fields["exitCode"]
        if code is not None and (type(code) is not int or not 0 <= code <= 255):
            raise InvalidArgument("result/exitCode", "must be an integer from 0 to 255, or null")
        signal = fields["signal"]
        if signal is not None and (not isinstance(signal, str) or not _SIGNAL_NAME.match(signal)):
            raise InvalidArgument("result/signal", "must be a signal name (SIG...) or null")
        flags = {}
        for name in ("streamed", "timedOut", "stdoutTruncated", "stderrTruncated"):
            if type(fields[name]) is not bool:
                raise InvalidArgument(f"result/{name}", "must be a boolean")
            flags[name] = fields[name]
        duration = fields["durationMs"]
        if type(duration) not in (int, float) or not math.isfinite(duration) or duration < 0:
            raise InvalidArgument("result/durationMs", "must be a number of at least 0")
        stdout = base64_to_bytes(fields["stdout"], "result/stdout")
        stderr = base64_to_bytes(fields["stderr"], "result/stderr")
        if flags["streamed"]:
            for name, empty in (("stdout", not stdout), ("stderr", not stderr),
                                ("stdoutTruncated", not flags["stdoutTruncated"]),
                                ("stderrTruncated", not flags["stderrTruncated"])):
                if not empty:
                    raise InvalidArgument(f"result/{name}", "must be empty or false in a streamed result")
        if signal is not None and code is not None:
            raise InvalidArgument("result/exitCode", "must be null when a signal is named")
        return cls(code, signal, stdout, stderr, flags["streamed"], flags["timedOut"],
                   flags["stdoutTruncated"], flags["stderrTruncated"], float(duration))


def _object(value: object, what: str, names: tuple[str, ...]) -> dict[str, Any]:
    """A JSON object with exactly these properties (the exact schema rejects unknown ones)."""
    if not isinstance(value, dict):
        raise InvalidArgument(what, "must be an object")
    for name in names:
        if name not in value:
            raise InvalidArgument(what, f'must have the property "{name}"')
    for name in value:
        if name not in names:
            raise InvalidArgument(f"{what}/{name}", "is not a property of this object")
    return value
