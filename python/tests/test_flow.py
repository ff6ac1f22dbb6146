"""Back-pressure (SS-FLOW-1): unread output is bounded, then delivered in full and in order."""

from __future__ import annotations

import asyncio
import random
import sys

from sandstream import DEFAULT_HIGH_WATER_MARK, create_local_sandbox

from .support import SandboxTest, alive, eventually

PY = sys.executable
READ_SIZE = 256 * 1024  # what one read of the adapter may add past the mark


def writer(size: int, seed: int) -> list[str]:
    """A command that writes seeded bytes to stdout, then says so on stderr."""
    script = (
        "import os, random\n"
        f"data = random.Random({seed}).randbytes({size})\n"
        "view = memoryview(data)\n"
        "while view: view = view[os.write(1, view):]\n"
        "os.write(2, b'all written')\n"
    )
    return [PY, "-c", script]


class FlowTest(SandboxTest):
    async def check_paused_then_complete(self, proc, size: int, seed: int, mark: int) -> None:
        core = proc._core  # white box: how much is held unread
        self.record(proc.pid)
        # The reader reads nothing: reading pauses once a mark is unread.
        self.assertTrue(await eventually(lambda: core.paused), "reading never paused")
        self.assertLessEqual(core.queue._unread, mark + READ_SIZE)
        self.assertTrue(alive(proc.pid), "the command should be blocked on the full pipe, not done")
        data = {"stdout": [], "stderr": []}
        async for chunk in proc:
            data[chunk.stream].append(chunk.data)
        self.assertEqual(b"".join(data["stdout"]), random.Random(seed).randbytes(size))
        self.assertEqual(b"".join(data["stderr"]), b"all written")
        self.assertEqual((await proc.wait()).exit_code, 0)

    async def test_default_mark_bounds_unread_output_and_loses_nothing(self) -> None:
        size = 3 * DEFAULT_HIGH_WATER_MARK
        async with self.sandbox.stream(writer(size, 7)) as proc:
            await self.check_paused_then_complete(proc, size, 7, DEFAULT_HIGH_WATER_MARK)

    async def test_a_small_mark_paused_and_resumed_many_times(self) -> None:
        mark = 64 * 1024
        async with create_local_sandbox(high_water_mark=mark) as sandbox:
            size = 2 * 1024 * 1024
            async with sandbox.stream(writer(size, 8)) as proc:
                await self.check_paused_then_complete(proc, size, 8, mark)

    async def test_a_slow_reader_gets_every_byte(self) -> None:
        size = 2 * 1024 * 1024
        async with create_local_sandbox(high_water_mark=32 * 1024) as sandbox:
            async with sandbox.stream(writer(size, 9)) as proc:
                self.record(proc.pid)
                out = bytearray()
                async for chunk in proc:
                    if chunk.stream == "stdout":
                        out += chunk.data
                    await asyncio.sleep(0)
        self.assertEqual(bytes(out), random.Random(9).randbytes(size))

    async def test_teardown_of_a_command_blocked_on_a_full_pipe(self) -> None:
        # Blocked on output while nobody reads, the command still acts on SIGTERM.
        script = "trap 'echo bye >&2; exit 9' TERM; while :; do head -c 65536 /dev/zero; done"
        async with self.sandbox.stream(["sh", "-c", script]) as proc:
            self.record(proc.pid)
            self.assertTrue(await eventually(lambda: proc._core.paused))
        result = await proc.wait()
        self.assertEqual((result.exit_code, result.signal), (9, None))
