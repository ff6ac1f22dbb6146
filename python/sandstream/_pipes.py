"""A command's pipes on the event loop: non-blocking readers for its output, a writer for its input.

Readers are ``loop.add_reader`` callbacks; pausing one removes it, so the
command blocks on a full pipe instead of this process filling its memory
(SS-FLOW-1). The writer hands bytes to the pipe in call order and reports a
reader that went away as ``StdinClosed``.
"""

from __future__ import annotations

import asyncio
import collections
import errno
import os
from collections.abc import Callable

from ._terminal import end_of_file
from .errors import StdinClosed, TransportError

# One read takes what a default pipe holds (64 KiB) and more, when the
# command writes faster than we are scheduled.
_READ_SIZE = 256 * 1024
# One write at most; a larger one is split as the pipe takes it.
_WRITE_SIZE = 1024 * 1024


class OutputReader:
    """Reads one output pipe while not paused; ``on_eof`` once it ends (or fails, or is given up)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        fd: int,
        on_data: Callable[[bytes], None],
        on_eof: Callable[[], None],
    ) -> None:
        self._loop = loop
        self._fd: int | None = fd
        self._on_data = on_data
        self._on_eof = on_eof
        self._watching = False
        self.bytes_seen = 0
        self.resume()

    @property
    def open(self) -> bool:
        """True until end-of-file (or until closed)."""
        return self._fd is not None

    def pause(self) -> None:
        if self._watching and self._fd is not None:
            self._loop.remove_reader(self._fd)
            self._watching = False

    def resume(self) -> None:
        if not self._watching and self._fd is not None:
            self._loop.add_reader(self._fd, self._readable)
            self._watching = True

    def _readable(self) -> None:
        if self._fd is None:
            return
        try:
            data = os.read(self._fd, _READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""  # a failed read ends the pipe like end-of-file
        if not data:
            self.close()
            self._on_eof()
            return
        self.bytes_seen += len(data)
        self._on_data(data)

    def close(self) -> None:
        """Stops reading and closes our end; nothing more is reported."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        if self._watching:
            self._loop.remove_reader(fd)
            self._watching = False
        os.close(fd)


class StdinPipe:
    """The command's standard input: writes in call order, each resolving once the pipe took all its bytes.

    A write waits for room while the command is slow to read (backpressure),
    and fails with ``StdinClosed`` once nobody reads any more (EPIPE). After
    ``end()`` or ``close()``, writes fail with ``StdinClosed``.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, terminal: bool = False) -> None:
        self._loop = loop
        self._fd: int | None = fd
        # Under a terminal (spec 1.5) the descriptor is the terminal's (it closes it), end()
        # types end-of-file instead of closing anything, and the last byte queued decides how.
        self._terminal = terminal
        self._last_byte: int | None = None
        self._pending: collections.deque[tuple[memoryview, asyncio.Future[None]]] = collections.deque()
        self._waiting = False
        self._ending: asyncio.Future[None] | None = None
        self.found_closed = False
        self._uncertain: TransportError | None = None

    @property
    def closed(self) -> bool:
        """True once ``end()`` was called or the pipe was found (or made) closed."""
        return self._ending is not None or self._fd is None

    def write(self, data: bytes) -> asyncio.Future[None]:
        """Queues ``data``; the future resolves once the pipe took all of it."""
        future: asyncio.Future[None] = self._loop.create_future()
        # A caller that stopped awaiting must not make asyncio log the failure as unretrieved.
        future.add_done_callback(_retrieve)
        if self.closed:
            future.set_exception(StdinClosed("standard input is closed"))
        elif self._uncertain is not None:
            future.set_exception(self._refusal())
        elif not data:
            future.set_result(None)
        else:
            # Copied: the caller may reuse its buffer once write() returned.
            self._pending.append((memoryview(bytes(data)), future))
            self._last_byte = data[-1]
            self._pump()
        return future

    def end(self) -> asyncio.Future[None]:
        """Closes standard input after every queued write; never fails because the command exited.

        Under a terminal it types end-of-file after them (0x04, twice when the
        line typed so far is not empty) and stops taking writes; the terminal
        stays open. After a write of uncertain delivery nothing is typed.
        """
        if self._ending is None:
            if self._terminal and self._fd is not None and self._uncertain is None:
                typed: asyncio.Future[None] = self._loop.create_future()
                typed.add_done_callback(_retrieve)
                self._pending.append((memoryview(end_of_file(self._last_byte)), typed))
            self._ending = self._loop.create_future()
            self._pump()
        return self._ending

    def _pump(self) -> None:
        while self._pending and self._fd is not None:
            view, future = self._pending[0]
            try:
                written = os.write(self._fd, view[:_WRITE_SIZE])
            except (BlockingIOError, InterruptedError):
                self._wait_for_room()
                return
            except BrokenPipeError as error:
                self.found_closed = True
                self._fail_all(StdinClosed(f"the command stopped reading standard input ({error.strerror})"))
                self.close()
                return
            except OSError as error:
                if self._terminal and error.errno == errno.EIO:
                    # The terminal's other side is closed: the command's session has ended.
                    self.found_closed = True
                    self._fail_all(StdinClosed("the command has exited; its terminal is closed"))
                    self.close()
                    return
                # Not a closed reader: what reached the pipe is unknown, so
                # nothing more may follow it (SS-STDIN-3).
                self._uncertain = TransportError(f"writing standard input failed: {error}", cause=error)
                self._fail_all(self._uncertain)
                return
            rest = view[written:]
            if rest:
                self._pending[0] = (rest, future)
                continue
            self._pending.popleft()
            if not future.done():  # a caller that gave up still had its bytes written, in order
                future.set_result(None)
        self._stop_waiting()
        self._finish_if_drained()

    def _wait_for_room(self) -> None:
        if not self._waiting and self._fd is not None:
            # A closed reader makes the pipe "writable" (EPOLLERR): the next write sees EPIPE.
            self._loop.add_writer(self._fd, self._pump)
            self._waiting = True

    def _stop_waiting(self) -> None:
        if self._waiting and self._fd is not None:
            self._loop.remove_writer(self._fd)
        self._waiting = False

    def _finish_if_drained(self) -> None:
        if self._ending is not None and not self._pending:
            self.close()

    def _fail_all(self, error: BaseException) -> None:
        pending, self._pending = self._pending, collections.deque()
        for _, future in pending:
            if not future.done():
                future.set_exception(error)

    def _refusal(self) -> TransportError:
        return TransportError(
            "an earlier write's delivery is uncertain; standard input accepts no more writes (end() still closes it)",
            cause=self._uncertain,
        )

    def close(self) -> None:
        """Closes our end now; queued writes fail with ``StdinClosed``, a pending ``end()`` resolves."""
        self._stop_waiting()
        fd, self._fd = self._fd, None
        if fd is not None and not self._terminal:
            os.close(fd)
        self._fail_all(StdinClosed("standard input is closed: the command has exited"))
        if self._ending is not None and not self._ending.done():
            self._ending.set_result(None)


def _retrieve(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()
