"""An owner process for the tests of owner loss: a sandbox driven by JSON lines on stdin.

Run as ``python owner_process.py GRACE_MS`` with the package on PYTHONPATH.
It answers ``{"ownerLossMs", "graceMs"}`` at once, then one JSON object per
request line (a JSON array):

- ``["stream", argv]``: starts ``argv`` with ``stream()``; ``{"pid", "guardian"}``;
- ``["stream-pty", argv]``: the same on a terminal (``pty``); ``{"pid", "guardian"}``;
- ``["run", argv]``: starts ``argv`` with ``run()`` in a task; ``{"guardian"}``;
- ``["close"]``: closes the sandbox; ``{"guardian"}``;
- ``["exit"]``: returns from ``main()``: a normal exit, whatever still runs.

The test ends it otherwise with SIGKILL.
"""

from __future__ import annotations

import asyncio
import json
import sys

from sandstream import Process, create_local_sandbox
from sandstream._guardian import process_guardian

# Kept here so that nothing is collected (and warned about) while the owner lives.
HELD: list[Process | asyncio.Task[object]] = []


def answer(value: object) -> None:
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


async def main() -> None:
    loop = asyncio.get_running_loop()
    sandbox = create_local_sandbox(grace_ms=float(sys.argv[1]))
    answer({"ownerLossMs": sandbox.termination.owner_loss_ms, "graceMs": sandbox.termination.grace_ms})
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        request = json.loads(line)
        if request[0] in ("stream", "stream-pty"):
            proc = sandbox.stream(request[1], pty={"cols": 80, "rows": 24} if request[0] == "stream-pty" else None)
            HELD.append(proc)
            await proc.started()
            answer({"pid": proc.pid, "guardian": process_guardian().pid})
        elif request[0] == "run":
            task = asyncio.ensure_future(sandbox.run(request[1]))
            HELD.append(task)
            await asyncio.sleep(0)  # the task's first step starts the command
            answer({"guardian": process_guardian().pid})
        elif request[0] == "close":
            await sandbox.close()
            answer({"guardian": process_guardian().pid})
        elif request[0] == "exit":
            return


if __name__ == "__main__":
    asyncio.run(main())
