"""Options in the spec's shape (as a testee receives them over the wire) to this API's keywords.

The spec names options in camelCase, measures ``timeout`` in milliseconds and
rejects an unknown key with ``InvalidArgument``; this API takes snake_case
keywords, ``timeout`` in seconds, and an unknown keyword is Python's
``TypeError``. These helpers bridge the two without judging the values:

    await sb.run(argv, **run_options({"timeout": 5000, "maxOutputBytes": 10}))

Values pass through unchanged (but for ``timeout``'s unit), so ``run()`` and
``stream()`` reject a wrong one under the spec's key. A key that is absent
(JavaScript's ``undefined``) is left out by the caller; a JSON ``null`` is
rejected here, since no option of the spec takes it and this API reads
``None`` as absent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .errors import InvalidArgument

__all__ = ["run_options", "stream_options"]

_COMMON = {
    "timeout": "timeout",
    "env": "env",
    "cwd": "cwd",
    "signal": "signal",
    "limits": "limits",
    "user": "user",
    "input": "input",
    "pty": "pty",
}
_RUN = {**_COMMON, "maxOutputBytes": "max_output_bytes", "onOutput": "on_output"}
_STREAM = {**_COMMON, "stdin": "stdin", "background": "background"}
_LIMITS = {
    "cpuSeconds": "cpu_seconds",
    "addressSpaceBytes": "address_space_bytes",
    "fileSizeBytes": "file_size_bytes",
    "openFiles": "open_files",
}
# What to use instead, for an option of the other call.
_HINTS = {
    "maxOutputBytes": "stream() buffers nothing: the Process yields each chunk as it arrives",
    "onOutput": "iterate the Process that stream() returns to see each chunk",
    "background": "run() waits for the end; a command that outlives the call is stream() with background",
    "stdin": 'run() takes its whole standard input up front as input; for a writer, use stream() with stdin "pipe"',
}


def run_options(options: object) -> dict[str, Any]:
    """The keyword arguments of ``run()`` for spec-shaped ``RunOptions``."""
    return _keywords(options, _RUN, "run", _STREAM)


def stream_options(options: object) -> dict[str, Any]:
    """The keyword arguments of ``stream()`` for spec-shaped ``StreamOptions``."""
    return _keywords(options, _STREAM, "stream", _RUN)


def _keywords(options: object, names: dict[str, str], call: str, other: dict[str, str]) -> dict[str, Any]:
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise InvalidArgument("options", f"must be an object, got {type(options).__name__}")
    keywords: dict[str, Any] = {}
    for key, value in options.items():
        if key not in names:
            reason = "unknown option"
            if key in other:
                reason += f": {key} is an option of {'stream' if call == 'run' else 'run'}(), not {call}() ({_HINTS[key]})"
            raise InvalidArgument(f"options.{key}", reason)
        if value is None:
            raise InvalidArgument(f"options.{key}", "must not be null")
        if key == "timeout":
            value = _seconds(value)
        elif key == "limits" and isinstance(value, Mapping):
            value = {_LIMITS.get(name, name): entry for name, entry in value.items()}
        keywords[names[key]] = value
    return keywords


def _seconds(milliseconds: object) -> object:
    """Milliseconds to seconds, for a number; anything else is left for run() or stream() to reject."""
    if isinstance(milliseconds, bool) or not isinstance(milliseconds, (int, float)):
        return milliseconds
    seconds = milliseconds / 1000
    # A positive timeout stays positive, however small (1e-320 ms must not become 0).
    if milliseconds > 0 and math.isfinite(milliseconds) and seconds == 0:
        return math.ulp(0.0)
    return seconds
