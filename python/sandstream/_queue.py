"""The unread chunks of a streamed command, with back-pressure (a port of the TypeScript ChunkQueue).

The producer (the pipe readers) is paused once the unread bytes reach the
high-water mark and resumed once the reader brought them down to half of it;
nothing is dropped or reordered meanwhile (SS-FLOW-1).

It also decides what a pending ``wait()`` does to unread output (SS-WAIT-3):
output no live iterator will read is discarded, while a loop that is reading
keeps receiving every chunk to the end.

- Without an iterator, unread output is discarded at once.
- An iterator waiting for a chunk when ``wait()`` is called, or asking for
  one afterwards, is reading: nothing is discarded, and a reader that falls
  behind pauses the producer as usual.
- An iterator that exists but has not asked for a chunk since ``wait()`` was
  called is given until a high-water mark of output is unread; then it is
  taken as abandoned and the output is discarded, so ``wait()`` cannot hang.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable

from .results import OutputChunk


class ChunkQueue:
    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        high_water_mark: int,
        pause: Callable[[], None],
        resume: Callable[[], None],
    ) -> None:
        self._loop = loop
        self._mark = high_water_mark
        self._pause = pause
        self._resume = resume
        self._chunks: collections.deque[OutputChunk] = collections.deque()
        self._unread = 0
        self._waiter: asyncio.Future[OutputChunk | None] | None = None
        self._paused = False
        self._resumed: list[asyncio.Future[None]] = []
        self._discarding = False
        self._tearing_down = False
        self._reader = "none"  # "none", "attached" or "reading", as wait() sees the iterator
        self._result_awaited = False

    @property
    def paused(self) -> bool:
        """True while the producer is paused because the reader is behind."""
        return self._paused

    @property
    def discarding(self) -> bool:
        """True once ``discard()`` was called: nothing is queued any more."""
        return self._discarding

    def _live_waiter(self) -> asyncio.Future[OutputChunk | None] | None:
        # A reader whose task was cancelled left a cancelled future: the chunk is queued instead.
        waiter = self._waiter
        return waiter if waiter is not None and not waiter.done() else None

    def push(self, chunk: OutputChunk) -> None:
        """Hands a chunk to the waiting reader, or queues it; dropped once discarding."""
        if self._discarding:
            return
        waiter = self._live_waiter()
        self._waiter = None
        if waiter is not None:
            waiter.set_result(chunk)
            return
        self._chunks.append(chunk)
        self._unread += len(chunk.data)
        if not self._paused and self._unread >= self._pause_mark():
            if self._result_awaited and self._reader == "attached":
                self.discard()  # nobody has read since wait() was called: abandoned
                return
            self._paused = True
            self._pause()

    def attach_reader(self) -> None:
        """An iterator was created: ``wait()`` leaves the output to its loop."""
        self._reader = "attached"

    def result_requested(self) -> None:
        """``wait()`` was called: discards what no live iterator will read."""
        self._result_awaited = True
        if self._reader == "none":
            self.discard()
        elif self._live_waiter() is not None:
            self._reader = "reading"
        elif self._paused:
            self.discard()  # a high-water mark is unread already

    def shift(self) -> OutputChunk | None:
        """The oldest unread chunk, or None; called by the iterator for every chunk."""
        if self._result_awaited and self._reader == "attached":
            self._reader = "reading"
        if not self._chunks:
            return None
        chunk = self._chunks.popleft()
        self._unread -= len(chunk.data)
        if self._paused and self._unread <= self._mark // 2:
            self._resume_producer()
        return chunk

    def next_pushed(self) -> asyncio.Future[OutputChunk | None]:
        """A future of the next chunk pushed (None once the output ended)."""
        if self._live_waiter() is not None:
            raise RuntimeError("the Process's iterator was asked for a chunk while another request was pending")
        self._waiter = self._loop.create_future()
        return self._waiter

    def end(self, error: BaseException | None) -> None:
        """Ends a pending request: None (done), or the error."""
        waiter = self._live_waiter()
        self._waiter = None
        if waiter is None:
            return
        if error is not None:
            waiter.set_exception(error)
        else:
            waiter.set_result(None)

    def discard(self) -> None:
        """Drops unread output and stops queueing: nobody will read it."""
        self._discarding = True
        self._chunks.clear()
        self._unread = 0
        self._resume_producer()

    def allow_teardown_slack(self) -> None:
        """Termination began: the queue may grow by one more mark, so a command blocked on a
        full pipe can act on SIGTERM, while one that floods output is paused again."""
        self._tearing_down = True
        if self._unread < self._pause_mark():
            self._resume_producer()

    def when_resumed(self) -> asyncio.Future[None]:
        """Resolves the next time a paused producer is resumed."""
        future: asyncio.Future[None] = self._loop.create_future()
        self._resumed.append(future)
        return future

    def _pause_mark(self) -> int:
        return 2 * self._mark if self._tearing_down else self._mark

    def _resume_producer(self) -> None:
        if not self._paused:
            return
        self._paused = False
        self._resume()
        resumed, self._resumed = self._resumed, []
        for future in resumed:
            if not future.done():
                future.set_result(None)
