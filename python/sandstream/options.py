"""Validation of argv and options (spec section 3), before anything starts.

Every problem raises ``InvalidArgument`` whose ``key`` uses the spec's names
(``argv[1]``, ``options.timeout``, ``options.env.NAME``,
``options.limits.cpuSeconds``, ``options.maxOutputBytes``), so a key reads
the same in every language. The result is a frozen ``CommandPlan``: changing
the caller's list or mapping afterwards changes nothing.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .abort import AbortSignal
from .errors import InvalidArgument

__all__ = ["ResourceLimits", "TerminalSize", "CommandPlan", "DEFAULT_MAX_OUTPUT_BYTES", "SIGNALS", "encode_text"]

#: The default per-stream cap of ``run()``: 64 MiB.
DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024 * 1024

#: The signal names ``Process.kill()`` accepts (SS-KILL-1).
SIGNALS = ("SIGTERM", "SIGKILL", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGSTOP", "SIGCONT")

_SURROGATE = re.compile("[\ud800-\udfff]")

# The Python names of the limits and the spec's names that error keys use.
_LIMIT_NAMES = {
    "cpu_seconds": "cpuSeconds",
    "address_space_bytes": "addressSpaceBytes",
    "file_size_bytes": "fileSizeBytes",
    "open_files": "openFiles",
}


@dataclass(frozen=True, slots=True)
class ResourceLimits:
    """Per-command resource limits (capability ``resource-limits``), each optional.

    ``cpu_seconds`` (RLIMIT_CPU), ``address_space_bytes`` (RLIMIT_AS),
    ``file_size_bytes`` (RLIMIT_FSIZE), ``open_files`` (RLIMIT_NOFILE).
    A mapping with these keys is accepted wherever this is.
    """

    cpu_seconds: int | None = None
    address_space_bytes: int | None = None
    file_size_bytes: int | None = None
    open_files: int | None = None


#: The largest terminal dimension: the kernel's ``winsize`` holds unsigned shorts.
MAX_TERMINAL_CELLS = 65535


@dataclass(frozen=True, slots=True)
class TerminalSize:
    """The size of a terminal in character cells (option ``pty``, capability ``pty``; spec 1.5).

    Whole numbers from 1 to 65535. A mapping ``{"cols": 80, "rows": 24}`` is
    accepted wherever this is.
    """

    cols: int
    rows: int


@dataclass(frozen=True, slots=True)
class CommandPlan:
    """A validated command: what to start and how the runtime treats it."""

    argv: tuple[str | bytes, ...]
    argv_bytes: tuple[bytes, ...]
    env: Mapping[bytes, bytes]
    cwd: bytes | None
    stdin: Literal["pipe", "ignore"]
    interactive: bool
    input: bytes | None
    limits: Mapping[str, int] | None
    user: str | None
    timeout: float | None
    signal: AbortSignal | None
    max_output_bytes: int
    on_output: Callable[[Any], None] | None
    background: bool
    #: The terminal to run the command on (spec 1.5), or None for pipes.
    pty: TerminalSize | None = None


def encode_text(value: str) -> bytes:
    """UTF-8, each lone surrogate becoming U+FFFD, as the WHATWG encoder does (spec 3.1)."""
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", value).encode("utf-8")


def _describe(value: object) -> str:
    return f"got {type(value).__name__}" if value is not None else "got None"


def _no_nul(key: str, value: bytes) -> bytes:
    if b"\0" in value:
        raise InvalidArgument(key, "must not contain a NUL character")
    return value


def _as_bytes(value: str | bytes) -> bytes:
    return encode_text(value) if isinstance(value, str) else bytes(value)


def check_argv(argv: object) -> tuple[tuple[str | bytes, ...], tuple[bytes, ...]]:
    """A non-empty list or tuple of str or bytes, the first non-empty, none holding NUL."""
    if isinstance(argv, (str, bytes)) or not isinstance(argv, (list, tuple)):
        raise InvalidArgument("argv", f"must be a list of strings, {_describe(argv)}")
    if not argv:
        raise InvalidArgument("argv", "must not be empty")
    encoded = []
    for index, item in enumerate(argv):
        if not isinstance(item, (str, bytes)):
            raise InvalidArgument(f"argv[{index}]", f"must be a string, {_describe(item)}")
        encoded.append(_no_nul(f"argv[{index}]", _as_bytes(item)))
    if not encoded[0]:
        raise InvalidArgument("argv[0]", "must not be empty")
    return tuple(argv), tuple(encoded)


def _positive_number(key: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise InvalidArgument(key, f"must be a finite number greater than 0, {_describe(value)}")
    return float(value)


def _positive_integer(key: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**63:
        raise InvalidArgument(key, f"must be a positive integer, {_describe(value)}")
    return value


def _path(key: str, value: object) -> bytes:
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, (str, bytes)) or not value:
        raise InvalidArgument(key, f"must be a non-empty string, {_describe(value)}")
    return _no_nul(key, _as_bytes(value))


def check_env(value: object, key: str = "options.env") -> dict[bytes, bytes]:
    """A mapping of str or bytes; names non-empty without ``=`` or NUL, values without NUL."""
    if not isinstance(value, Mapping):
        raise InvalidArgument(key, f"must be a mapping of strings, {_describe(value)}")
    env: dict[bytes, bytes] = {}
    for name, entry in value.items():
        if not isinstance(name, (str, bytes)):
            raise InvalidArgument(key, f"variable names must be strings, {_describe(name)}")
        shown = name.decode("utf-8", "replace") if isinstance(name, bytes) else name
        entry_key = f"{key}.{shown}"
        raw = _as_bytes(name)
        if not raw or b"=" in raw or b"\0" in raw:
            raise InvalidArgument(entry_key, 'a variable name must be non-empty and contain neither "=" nor NUL')
        if not isinstance(entry, (str, bytes)):
            raise InvalidArgument(entry_key, f"must be a string, {_describe(entry)}")
        env[raw] = _no_nul(entry_key, _as_bytes(entry))
    return env


def _limits(value: object) -> dict[str, int]:
    if isinstance(value, ResourceLimits):
        value = {name: getattr(value, name) for name in _LIMIT_NAMES}
    if not isinstance(value, Mapping):
        raise InvalidArgument("options.limits", f"must be ResourceLimits or a mapping, {_describe(value)}")
    limits: dict[str, int] = {}
    for name, entry in value.items():
        spec_name = _LIMIT_NAMES.get(name) if isinstance(name, str) else None
        if spec_name is None:
            raise InvalidArgument(f"options.limits.{name}", "unknown resource limit")
        if entry is not None:
            limits[spec_name] = _positive_integer(f"options.limits.{spec_name}", entry)
    return limits


def _user(value: object) -> str:
    # A string, as the spec's option is (a numeric uid is spelled "1000"): a number is refused, as every adapter refuses it.
    if not isinstance(value, str) or not value:
        raise InvalidArgument("options.user", f"must be a non-empty string, {_describe(value)}")
    _no_nul("options.user", value.encode("utf-8", "surrogatepass"))
    return value


def _dimension(key: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TERMINAL_CELLS:
        shown = "missing" if value is None else _describe(value)
        raise InvalidArgument(key, f"must be a whole number from 1 to {MAX_TERMINAL_CELLS}, {shown}")
    return value


def check_terminal_size(value: object, path: str | None = "options.pty") -> TerminalSize:
    """A terminal size: exactly ``cols`` and ``rows``, each a whole number from 1 to 65535.

    ``path`` names the object in error keys (``options.pty.cols``); with
    ``None`` the two numbers are named alone (``cols``), as ``resize()`` takes them.
    """
    def name(key: str) -> str:
        return key if path is None else f"{path}.{key}"

    if isinstance(value, TerminalSize):
        value = {"cols": value.cols, "rows": value.rows}
    if not isinstance(value, Mapping):
        raise InvalidArgument(path or "size", f"must be a TerminalSize or a mapping of cols and rows, {_describe(value)}")
    for key in value:
        if key not in ("cols", "rows"):
            raise InvalidArgument(name(str(key)), "unknown terminal setting (a size has cols and rows)")
    return TerminalSize(_dimension(name("cols"), value.get("cols")), _dimension(name("rows"), value.get("rows")))


def _input(value: object) -> bytes:
    if isinstance(value, str):
        return encode_text(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise InvalidArgument("options.input", f"must be bytes or a string, {_describe(value)}")


def plan_command(
    argv: object,
    *,
    call: Literal["run", "stream"],
    timeout: object = None,
    env: object = None,
    cwd: object = None,
    signal: object = None,
    limits: object = None,
    user: object = None,
    input: object = None,
    max_output_bytes: object = None,
    on_output: object = None,
    stdin: object = None,
    background: object = None,
    pty: object = None,
) -> CommandPlan:
    """Checks argv, then the options (``None`` is absent); raises ``InvalidArgument``."""
    checked_argv, argv_bytes = check_argv(argv)
    if signal is not None and not isinstance(signal, AbortSignal):
        raise InvalidArgument("options.signal", f"must be an AbortSignal, {_describe(signal)}")
    one_shot = None if input is None else _input(input)
    stdin_mode: Literal["pipe", "ignore"] = "pipe" if one_shot is not None else "ignore"
    interactive = False
    cap = DEFAULT_MAX_OUTPUT_BYTES
    if call == "run":
        if max_output_bytes is not None:
            if isinstance(max_output_bytes, bool) or not isinstance(max_output_bytes, int) or max_output_bytes < 0:
                raise InvalidArgument("options.maxOutputBytes", f"must be a non-negative integer, {_describe(max_output_bytes)}")
            cap = max_output_bytes
        if on_output is not None and not callable(on_output):
            raise InvalidArgument("options.onOutput", f"must be callable, {_describe(on_output)}")
    else:
        if stdin is not None and stdin not in ("pipe", "ignore"):
            raise InvalidArgument("options.stdin", f'must be "pipe" or "ignore", got {stdin!r}')
        interactive = stdin == "pipe"
        if interactive and one_shot is not None:
            raise InvalidArgument("options.input", 'cannot be combined with stdin="pipe"; write to proc.stdin instead')
        if interactive:
            stdin_mode = "pipe"
    is_background = _background(background, timeout=timeout, signal=signal, input=input, stdin=stdin)
    terminal = None if pty is None else check_terminal_size(pty)
    return CommandPlan(
        argv=checked_argv,
        argv_bytes=argv_bytes,
        env={} if env is None else check_env(env),
        cwd=None if cwd is None else _path("options.cwd", cwd),
        stdin=stdin_mode,
        interactive=interactive,
        input=one_shot,
        limits=None if limits is None else _limits(limits),
        user=None if user is None else _user(user),
        timeout=None if timeout is None else _positive_number("options.timeout", timeout),
        signal=signal,
        max_output_bytes=cap,
        on_output=on_output if call == "run" else None,  # type: ignore[arg-type]
        background=is_background,
        pty=terminal,
    )


def _background(value: object, **scoped: object) -> bool:
    """``background=True`` takes none of what belongs to a scope (SS-BG-4)."""
    if value is None or value is False:
        return False
    if value is not True:
        raise InvalidArgument("options.background", f"must be a boolean, {_describe(value)}")
    for name in ("timeout", "signal", "input"):
        if scoped[name] is not None:
            raise InvalidArgument("options.background", f"cannot be combined with {name}: a background command has no scope")
    if scoped["stdin"] == "pipe":
        raise InvalidArgument("options.background", 'cannot be combined with stdin="pipe"')
    return True


def positive_integer(key: str, value: object) -> int:
    """A positive integer, else ``InvalidArgument`` naming ``key`` (shared with the sandbox's settings)."""
    return _positive_integer(key, value)


def non_negative_number(key: str, value: object) -> float:
    """A finite number of at least 0, else ``InvalidArgument`` naming ``key``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise InvalidArgument(key, f"must be a finite number of at least 0, {_describe(value)}")
    return value


def check_cwd(value: object, key: str) -> bytes:
    """A working directory: non-empty str, bytes or path, without NUL."""
    return _path(key, value)

