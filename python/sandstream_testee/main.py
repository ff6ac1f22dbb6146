"""The testee's standard streams: requests in on standard input, answers and calls out on standard output.

Standard output belongs to the protocol (SS-TESTEE-1): it is taken over
before anything else runs, and file descriptor 1 then points at standard
error, so nothing printed by accident can corrupt a line.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from sandstream import create_local_sandbox

from .server import Testee

__all__ = ["main", "serve_stdio"]

# A request can be large (standard input of several MiB, in base64): lines are not limited in practice.
_LINE_LIMIT = 1 << 30


class _Output:
    """Writes whole lines to the protocol's descriptor; once the kit is gone, writes nothing."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._broken = False
        os.set_blocking(fd, True)  # a line is written whole, in order, before the next

    def send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=True, separators=(",", ":"), allow_nan=False) + "\n"
        view = memoryview(line.encode("ascii"))
        while view and not self._broken:
            try:
                written = os.write(self._fd, view)
            except InterruptedError:
                continue
            except OSError:
                self._broken = True  # the kit went away: its end of the run is ours too
                return
            view = view[written:]


def _claim_stdout() -> int:
    """The protocol's own copy of standard output; fd 1 and ``sys.stdout`` become standard error."""
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return fd


async def _serve(factory: Callable[[], Any], out_fd: int) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_LINE_LIMIT)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    def stop() -> None:
        # SIGTERM (the kit's end of the run, or anyone's) ends like the end of input:
        # the sandboxes are closed, so no command outlives the testee.
        transport.pause_reading()
        if not reader.at_eof():
            reader.feed_eof()

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(signum, stop)
    testee = Testee(factory, _Output(out_fd).send)
    loop.set_exception_handler(testee.report_fault)
    try:
        await testee.serve(reader)
    finally:
        transport.close()


def serve_stdio(factory: Callable[[], Any]) -> int:
    """Serves ``factory`` (a function returning a fresh sandbox, or an awaitable of one) until the kit is done."""
    out_fd = _claim_stdout()
    asyncio.run(_serve(factory, out_fd))
    return 0


def main() -> int:
    """Serves the local adapter, ``create_local_sandbox()``, with its default settings."""
    return serve_stdio(create_local_sandbox)
