"""Where one command's output goes, chunk by chunk, in the order it was read.

First to the caller's ``on_output`` (which, once it raises, is never called
again: the command then ends, SS-ONOUT-2), then to the chunk queue a
``stream()`` reads from, or to the captures ``run()`` keeps up to its cap.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ._capture import Capture
from ._queue import ChunkQueue
from .results import OutputChunk, StreamName

__all__ = ["OutputSink"]


class OutputSink:
    def __init__(self, loop: asyncio.AbstractEventLoop, streamed: bool, on_output: Callable[[OutputChunk], object] | None,
                 max_output_bytes: int, high_water_mark: int, on_flow: Callable[[], None],
                 on_callback_failed: Callable[[Exception], None]) -> None:
        self._on_output = on_output
        self._on_callback_failed = on_callback_failed
        self._captures = {"stdout": Capture(max_output_bytes), "stderr": Capture(max_output_bytes)}
        #: ``stream()``'s chunks, paced by the reader (``on_flow`` pauses and resumes the pipes); None under ``run()``.
        self.queue = ChunkQueue(loop, high_water_mark, on_flow, on_flow) if streamed else None

    def deliver(self, stream: StreamName, data: bytes) -> None:
        chunk = OutputChunk(stream, data)
        if self._on_output is not None:
            try:
                self._on_output(chunk)
            except Exception as error:  # the caller's bug: never called again, the command ends
                self._on_output = None
                self._on_callback_failed(error)
        if self.queue is not None:
            self.queue.push(chunk)
        else:
            self._captures[stream].add(data)

    def captured(self, stream: StreamName) -> bytes:
        """What ``run()`` kept of ``stream``; empty under ``stream()``."""
        return self._captures[stream].bytes()

    def truncated(self, stream: StreamName) -> bool:
        """True when ``run()`` dropped some of ``stream`` beyond its cap."""
        return self.queue is None and self._captures[stream].truncated
