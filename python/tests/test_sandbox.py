"""The sandbox's own duties: close() with work in flight, limits, accounts, the safety net, no pidfd."""

from __future__ import annotations

import asyncio
import errno
import gc
import os
import sys
import tempfile
import warnings
from pathlib import Path
from unittest import mock

from sandstream import OutputChunk, ProcessLeakedWarning, ResourceLimits

from .support import STUBBORN_TREE, SandboxTest, eventually, group_members, pids_in

PY = sys.executable


class CloseTest(SandboxTest):
    async def test_a_run_in_flight_resolves_with_how_close_ended_it(self) -> None:
        seen: list[bytes] = []
        ready = asyncio.Event()

        def collect(chunk: OutputChunk) -> None:
            seen.append(chunk.data)
            if b"ready" in b"".join(seen):
                ready.set()

        task = asyncio.create_task(self.sandbox.run(STUBBORN_TREE, on_output=collect))
        await ready.wait()
        pids = pids_in(b"".join(seen).replace(b"ready", b""))
        self.record(*pids)
        await self.sandbox.close()
        self.assert_gone(pids, "after close()")
        result = await task
        self.assertEqual((result.exit_code, result.signal), (143, None))
        self.assertIn(b"ready", result.stdout)

    async def test_a_loop_in_flight_ends(self) -> None:
        proc = self.sandbox.stream(["sh", "-c", "echo first; exec sleep 60"])
        self.record(proc.pid)
        chunks = []

        async def read() -> None:
            async for chunk in proc:
                chunks.append(chunk.data)

        reader = asyncio.create_task(read())
        self.assertTrue(await eventually(lambda: chunks == [b"first\n"]))
        await self.sandbox.close()
        await asyncio.wait_for(reader, 5)
        self.assertEqual((await proc.wait()).signal, "SIGTERM")


class LimitsTest(SandboxTest):
    async def test_each_limit_stops_the_command_and_the_result_shows_it(self) -> None:
        cpu = await self.sandbox.run(["sh", "-c", "while :; do :; done"], limits={"cpu_seconds": 1}, timeout=10)
        self.assertIn(cpu.signal, ("SIGXCPU", "SIGKILL"))
        self.assertFalse(cpu.timed_out)
        with tempfile.TemporaryDirectory() as directory:
            size = await self.sandbox.run(
                ["sh", "-c", f"exec head -c 100000 /dev/zero > {directory}/big"], limits=ResourceLimits(file_size_bytes=1000))
            self.assertEqual(size.signal, "SIGXFSZ")
            self.assertEqual(Path(directory, "big").stat().st_size, 1000)
        memory = await self.sandbox.run([PY, "-c", "x = bytearray(500_000_000)"], limits={"address_space_bytes": 100_000_000})
        self.assertNotEqual(memory.exit_code, 0)
        self.assertIn(b"MemoryError", memory.stderr)
        opener = [PY, "-c", "import os; [os.open('/dev/null', 0) for _ in range(20)]; print('opened')"]
        files = await self.sandbox.run(opener, limits={"open_files": 10})
        self.assertNotEqual(files.exit_code, 0)
        self.assertIn(b"Too many open files", files.stderr)
        # Limits hold only for the command they were given to.
        free = await self.sandbox.run(opener)
        self.assertEqual(free.stdout, b"opened\n")


class UserTest(SandboxTest):
    async def test_a_command_runs_as_the_account_with_its_own_groups(self) -> None:
        if not self.sandbox.capabilities["user"]:
            self.skipTest("switching accounts needs root")
        result = await self.sandbox.run(["sh", "-c", 'id -u; id -g; id -G; echo "$USER $HOME"'], user="nobody")
        uid, gid, groups, identity = result.stdout.decode().splitlines()
        self.assertEqual((uid, gid), ("65534", "65534"))
        self.assertNotIn("0", groups.split(), "the command kept root's groups")
        self.assertEqual(identity, "nobody /nonexistent")
        numeric = await self.sandbox.run(["id", "-u"], user="65534", limits={"open_files": 64})
        self.assertEqual(numeric.stdout, b"65534\n")


class SafetyNetTest(SandboxTest):
    async def test_a_dropped_running_process_is_terminated_with_a_warning(self) -> None:
        proc = self.sandbox.stream(["sleep", "60"])
        pid = proc.pid
        assert pid is not None
        self.record(pid)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            del proc
            gc.collect()
        self.assertEqual([w.category for w in caught], [ProcessLeakedWarning])
        self.assertIn("sleep", str(caught[0].message))
        self.assertTrue(await eventually(lambda: group_members(pid) == []))

    async def test_a_process_in_use_without_a_name_is_not_collected(self) -> None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            waiting = asyncio.create_task(self.sandbox.stream(["sh", "-c", "sleep 0.2; exit 3"]).wait())
            await asyncio.sleep(0.05)
            gc.collect()
            self.assertEqual((await waiting).exit_code, 3)
            async for chunk in self.sandbox.stream(["sh", "-c", "sleep 0.1; echo late"]):
                gc.collect()
                self.assertEqual(chunk.data, b"late\n")
        self.assertEqual(caught, [])


class WithoutPidfdTest(SandboxTest):
    async def test_the_leader_is_still_watched_and_the_tree_torn_down(self) -> None:
        refused = OSError(errno.EMFILE, os.strerror(errno.EMFILE))
        with mock.patch("os.pidfd_open", side_effect=refused):
            exited = self.sandbox.stream(["sh", "-c", "exit 6"])
            tree = self.sandbox.stream(STUBBORN_TREE)
        self.assertEqual((await exited.wait()).exit_code, 6)
        async with tree:
            pids = pids_in((await self.read_until(aiter(tree), b"ready")).replace(b"ready", b""))
            self.record(*pids)
        self.assert_gone(pids, "after teardown without a pidfd")
        self.assertEqual((await tree.wait()).exit_code, 143)
