"""The public face of a streamed command: ``Process``, its iterator and its ``StdinWriter``.

    async with sb.stream(["pytest", "-q"], timeout=300) as proc:
        async for chunk in proc:
            log.write(chunk.data)
        result = await proc.wait()   # ExecResult, streamed=True

Leaving the ``async with`` block terminates the command's process group,
however it is left: the loop completing, ``break``, an exception, task
cancellation, ``asyncio.timeout``. Python's ``async for`` does not close its
iterator on ``break``, so the block (or ``aclose()``, or
``contextlib.aclosing``) is what ends the command; ``Sandbox.close()`` ends
every command the sandbox started, and a Process dropped while running is
terminated with a ``ProcessLeakedWarning``.
"""

from __future__ import annotations

import asyncio
import signal as _signal
import warnings
import weakref
from types import TracebackType

from ._core import ProcessCore
from ._shielded import complete
from .errors import InvalidArgument, InvalidState, StdinClosed, TransportError
from .options import SIGNALS, TerminalSize, check_terminal_size, encode_text
from .results import ExecResult, OutputChunk

__all__ = ["Process", "StdinWriter", "ProcessLeakedWarning"]


class ProcessLeakedWarning(ResourceWarning):
    """A Process was garbage-collected while its command ran; the command is being terminated."""


class StdinWriter:
    """The command's standard input, when started with ``stdin="pipe"``.

    Writes reach the command in call order, exactly once; each resolves once
    the pipe took its bytes (not once the command read them), waiting for
    room while the command is slow to read.
    """

    def __init__(self, core: ProcessCore, owner: Process) -> None:
        self._core = core
        self._owner = owner  # a caller still writing keeps its Process (and command) alive

    @property
    def closed(self) -> bool:
        """True once ``end()`` was called, the pipe was found closed, or the command ended."""
        pipe = self._core.stdin
        return pipe is None or pipe.closed or self._core.settled

    async def write(self, data: bytes | bytearray | memoryview | str) -> None:
        """Writes bytes (a str is encoded as UTF-8).

        Raises ``InvalidArgument`` (key ``data``) for anything else,
        ``StdinClosed`` after ``end()``, once the command exited or stopped
        reading, and ``TransportError`` once a write's delivery is uncertain.
        """
        if isinstance(data, str):
            payload = encode_text(data)
        elif isinstance(data, (bytes, bytearray, memoryview)):
            payload = bytes(data)
        else:
            raise InvalidArgument("data", f"must be bytes or a string, got {type(data).__name__}")
        pipe = self._core.stdin
        if pipe is None or self._core.settled:
            raise StdinClosed("standard input is closed: the command has exited")
        await asyncio.shield(pipe.write(payload))

    async def end(self) -> None:
        """Closes standard input after every queued write; idempotent, never fails because the command exited."""
        pipe = self._core.stdin
        if pipe is not None:
            await asyncio.shield(pipe.end())


class _ChunkIterator:
    """The one iterator of a Process. It holds its Process, so a running loop keeps it alive."""

    def __init__(self, core: ProcessCore, owner: Process) -> None:
        self._core = core
        self._owner = owner

    def __aiter__(self) -> _ChunkIterator:
        return self

    async def __anext__(self) -> OutputChunk:
        core = self._core
        assert core.queue is not None
        chunk = core.queue.shift()
        if chunk is not None:
            return chunk
        if core.settled or core.queue.discarding:
            # The end, or the command's terminal error, once it has settled.
            await asyncio.shield(core.when_settled())
            error = core.terminal_error(True)
            if error is not None:
                raise error
            raise StopAsyncIteration
        chunk = await core.queue.next_pushed()
        if chunk is None:
            raise StopAsyncIteration
        return chunk

    async def aclose(self) -> None:
        """Leaving the loop early is leaving the command's scope: terminates it."""
        await self._owner.aclose()


def _leaked(core: ProcessCore) -> None:
    if core.settled:
        return
    # Terminate first: under `-W error` the warning below raises.
    if core.loop.is_closed():
        try:
            core.signal(_signal.SIGKILL)
        except OSError:
            pass
    else:
        core.loop.call_soon_threadsafe(core.dispose)
    warnings.warn(
        f"a Process for {list(core.plan.argv)!r} was garbage-collected while its command ran; it is being "
        "terminated. Use `async with` or await wait() so teardown happens when you mean it to.",
        ProcessLeakedWarning,
        stacklevel=2,
    )


class Process:
    """A running command, returned by ``Sandbox.stream()`` with the command already started.

    An async iterable of ``OutputChunk`` (once only) and an async context
    manager. It is not awaitable: ``await sb.stream(...)`` is a TypeError, so
    a forgotten ``async with`` cannot hide behind an ``await``.
    """

    def __init__(self, core: ProcessCore) -> None:
        self._core = core
        self._stdin = StdinWriter(core, self) if core.plan.interactive else None
        self._iterated = False
        self._finalizer = weakref.finalize(self, _leaked, core)
        self._finalizer.atexit = False

    @property
    def id(self) -> str:
        """An opaque label, unique among the Processes of its sandbox."""
        return self._core.id

    @property
    def argv(self) -> tuple[str | bytes, ...]:
        """The command as validated (a copy of the caller's list)."""
        return self._core.plan.argv

    @property
    def pid(self) -> int | None:
        """The leader's process id (also its process group id); None when the start failed."""
        return self._core.pid

    @property
    def command_id(self) -> str | None:
        """The backend's id for the command: here the pid as a string. None when it never started."""
        return self._core.command_id

    @property
    def stdin(self) -> StdinWriter | None:
        """The writer when started with ``stdin="pipe"``, otherwise None (under ``pty`` too: its end-of-file is typed at the start)."""
        return self._stdin

    @property
    def terminal(self) -> TerminalSize | None:
        """Under ``pty``: the terminal's size last set (the one asked at the start until a resize); else None."""
        plan_size = self._core.plan.pty
        if plan_size is None:
            return None
        return plan_size if self._core.terminal is None else self._core.terminal.size

    @property
    def exited(self) -> bool:
        """True once the command is settled: the leader reaped and nothing of its group alive."""
        return self._core.settled

    def __aiter__(self) -> _ChunkIterator:
        """The chunks in arrival order; a second iteration raises ``InvalidState``."""
        if self._iterated:
            raise InvalidState("a Process can be iterated only once")
        self._iterated = True
        assert self._core.queue is not None
        self._core.queue.attach_reader()
        return _ChunkIterator(self._core, self)

    async def started(self) -> None:
        """Returns once the start was confirmed; raises as ``wait()`` would when it never started."""
        await asyncio.shield(self._core.started())

    async def wait(self) -> ExecResult:
        """The terminal result (``streamed=True``); idempotent.

        Output no iterator will read is drained and discarded; a loop that is
        iterating keeps receiving every chunk. Raises ``SpawnFailed``,
        ``AbortError`` or ``TransportError`` when the command ended that way.
        Cancelling the task that awaits it terminates the command first.
        """
        result = self._core.result()
        try:
            return await asyncio.shield(result)
        except asyncio.CancelledError:
            try:
                await complete(self._core.dispose())
            except TransportError:
                pass  # the cancellation is what the caller asked for; wait() reports the loss
            raise

    async def kill(self, signal: str = "SIGTERM") -> None:
        """Sends one signal (a name of ``SIGNALS``) to the command's process group.

        Not the termination sequence; no effect once the command exited.
        Raises ``InvalidArgument`` (key ``signal``) for another name and
        ``TransportError`` when the signal could not be delivered.
        """
        name = signal.name if isinstance(signal, _signal.Signals) else signal
        if name not in SIGNALS:
            raise InvalidArgument("signal", f"must be one of {', '.join(SIGNALS)}")
        try:
            self._core.signal(getattr(_signal, name))
        except OSError as error:
            raise TransportError(f"sending {name} failed: {error}", cause=error) from error

    async def resize(self, cols: int, rows: int) -> None:
        """Sets the size of the command's terminal (spec 1.5, ``pty``); resizes take effect in call order.

        The foreground process group receives SIGWINCH from the kernel when the
        size changed. Raises ``InvalidState`` on a Process started without
        ``pty`` or once the command has settled, ``InvalidArgument`` (key
        ``cols`` or ``rows``) unless each is a whole number from 1 to 65535.
        """
        if self._core.plan.pty is None:
            raise InvalidState("this Process has no terminal: start it with the pty option to resize it")
        size = check_terminal_size({"cols": cols, "rows": rows}, None)
        terminal = self._core.terminal
        if terminal is None or self._core.settled:
            raise InvalidState("the command has ended; its terminal is gone")
        try:
            terminal.resize(size)  # synchronous: the kernel has the size when this returns
        except OSError as error:
            if self._core.settled or terminal.input is None:
                raise InvalidState("the command has ended; its terminal is gone") from error
            raise TransportError(f"resizing the terminal failed: {error}", cause=error) from error

    async def aclose(self) -> None:
        """Leaves the Process's scope: discards unread output, terminates the command, waits until gone.

        Idempotent. Completes even if the awaiting task is cancelled meanwhile
        (the cancellation is re-raised afterwards). Raises ``TransportError``
        only when the command's end could not be confirmed.
        """
        self._finalizer.detach()
        await complete(self._core.dispose())

    dispose = aclose

    async def __aenter__(self) -> Process:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            await self.aclose()
        except TransportError:
            # A cancellation or an interrupt leaving the block wins; wait() still reports the loss.
            if exc is None or isinstance(exc, Exception):
                raise

    def __repr__(self) -> str:
        state = "exited" if self.exited else "running"
        return f"<Process {self.id} {list(self.argv)!r} pid={self.pid} {state}>"
