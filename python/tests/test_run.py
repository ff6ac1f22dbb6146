"""run() (spec section 5) and what every command shares: environment, cwd, start failures, abort, cancellation."""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import stat
import sys
import tempfile
import time
from pathlib import Path

from sandstream import AbortController, AbortError, CallbackFailed, OutputChunk, SpawnFailed, create_local_sandbox
from sandstream.abort import AbortSignal

from .support import GRACE_MS, STUBBORN_TREE, SandboxTest, pids_in

PY = sys.executable


class OutputCapTest(SandboxTest):
    async def test_the_cap_keeps_the_first_bytes_of_each_stream_and_drains_the_rest(self) -> None:
        script = "head -c 1000000 /dev/zero | tr '\\0' a; printf 0123456789 >&2"
        result = await asyncio.wait_for(self.sandbox.run(["sh", "-c", script], max_output_bytes=10), 20)
        self.assertEqual((result.stdout, result.stdout_truncated), (b"a" * 10, True))
        self.assertEqual((result.stderr, result.stderr_truncated), (b"0123456789", False))  # exactly the cap
        self.assertEqual(result.exit_code, 0)
        nothing = await self.sandbox.run(["echo", "x"], max_output_bytes=0)
        self.assertEqual((nothing.stdout, nothing.stdout_truncated, nothing.stderr_truncated), (b"", True, False))

    async def test_on_output_sees_every_chunk_past_the_cap_in_order(self) -> None:
        seen: list[OutputChunk] = []
        script = "for i in $(seq 1 300); do echo line$i; done; echo err >&2"
        result = await self.sandbox.run(["sh", "-c", script], max_output_bytes=5, on_output=seen.append)
        stdout = b"".join(c.data for c in seen if c.stream == "stdout")
        self.assertEqual(stdout, "".join(f"line{i}\n" for i in range(1, 301)).encode())
        self.assertEqual(b"".join(c.data for c in seen if c.stream == "stderr"), b"err\n")
        self.assertEqual(result.stdout, stdout[:5])

    async def test_a_raising_callback_ends_the_command_and_is_not_called_again(self) -> None:
        calls = []
        failure = RuntimeError("caller's bug")

        def callback(chunk: OutputChunk) -> None:
            calls.append(chunk)
            raise failure

        # The leader's trap writes once more while it is being terminated.
        tree = [*STUBBORN_TREE[:2], STUBBORN_TREE[2].replace("trap 'exit 143' TERM", "trap 'echo bye; exit 143' TERM")]
        with self.assertRaises(CallbackFailed) as caught:
            await self.sandbox.run(tree, on_output=callback)
        error = caught.exception
        self.assertEqual(len(calls), 1)
        # Captured until the command was gone: what its trap wrote while it was being terminated too.
        self.assertTrue(error.result is not None and b"bye\n" in error.result.stdout)
        self.assertIs(error.cause, failure)
        self.assertIs(error.__cause__, failure)
        assert error.result is not None
        pids = pids_in(error.result.stdout.replace(b"ready", b"").replace(b"bye", b""))
        self.record(*pids)
        self.assertGreaterEqual(len(pids), 1)
        self.assert_gone(pids, "after the callback failed")
        self.assertEqual(error.result.exit_code, 143)  # terminated: SIGTERM, its trap ran


class EnvironmentTest(SandboxTest):
    async def test_env_merges_over_the_base_and_cwd_is_the_working_directory(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            os.mkdir(f"{directory}/sub")
            result = await self.sandbox.run(
                ["sh", "-c", 'printf "%s|%s|%s" "$SANDSTREAM_X" "$PATH" "$(pwd -P)"'],
                env={"SANDSTREAM_X": "ü 1", "PATH": "/usr/bin:/bin"},
                cwd=Path(directory),
            )
            self.assertEqual(result.stdout.decode(), f"ü 1|/usr/bin:/bin|{os.path.realpath(directory)}")
            # A relative cwd resolves against the sandbox's; a base environment replaces this process's.
            async with create_local_sandbox(cwd=directory, env={"ONLY": "this", "PATH": os.environ["PATH"]}) as sb:
                inner = await sb.run(["sh", "-c", 'printf "%s|%s|%s" "$ONLY" "${HOME-unset}" "$(pwd -P)"'], cwd="sub")
            self.assertEqual(inner.stdout.decode(), f"this|unset|{os.path.realpath(directory)}/sub")

    async def test_bytes_are_passed_exactly(self) -> None:
        result = await self.sandbox.run([b"sh", b"-c", b'printf "%s" "$RAW"'], env={b"RAW": b"\xff\xfe"})
        self.assertEqual(result.stdout, b"\xff\xfe")


class SpawnFailureTest(SandboxTest):
    async def test_missing_program_missing_cwd_and_not_executable(self) -> None:
        with self.assertRaises(SpawnFailed) as caught:
            await self.sandbox.run(["ls -la"])
        self.assertIn("no such executable", str(caught.exception))
        self.assertIn("['ls', '-la']", str(caught.exception))  # argv is not a shell line: how to write it
        self.assertEqual(caught.exception.to_wire()["code"], "SPAWN_FAILED")
        with self.assertRaises(SpawnFailed) as caught:
            await self.sandbox.run(["true"], cwd="/no/such/directory")
        self.assertIn("working directory '/no/such/directory' does not exist", str(caught.exception))
        with tempfile.TemporaryDirectory() as directory:
            script = Path(directory, "script")
            script.write_text("#!/bin/sh\necho hi\n")
            script.chmod(stat.S_IRUSR | stat.S_IWUSR)
            with self.assertRaises(SpawnFailed) as caught:
                await self.sandbox.run([str(script)])
            self.assertIn("EACCES", str(caught.exception))

    async def test_out_of_descriptors_is_spawn_failed_and_loses_nothing_running(self) -> None:
        running = self.sandbox.stream(["sh", "-c", "read line; echo got $line"], stdin="pipe")
        self.record(running.pid)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        used = max(int(fd) for fd in os.listdir("/proc/self/fd"))
        resource.setrlimit(resource.RLIMIT_NOFILE, (used + 1, hard))
        filler: list[int] = []
        try:
            # Take every descriptor left below the limit: the next pipe cannot be made.
            with contextlib.suppress(OSError):
                while True:
                    filler.append(os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC))
            failed = self.sandbox.stream(["true"])
            with self.assertRaises(SpawnFailed) as caught:
                await self.sandbox.run(["true"])
        finally:
            for fd in filler:
                os.close(fd)
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        self.assertTrue(failed.exited)
        with self.assertRaises(SpawnFailed):
            await failed.wait()
        self.assertIn("EMFILE", str(caught.exception))
        self.assertIn("file descriptors", str(caught.exception))
        assert running.stdin is not None
        await running.stdin.write("still here\n")
        data = b"".join([chunk.data async for chunk in running])
        self.assertEqual(data, b"got still here\n")
        self.assertEqual((await running.wait()).exit_code, 0)
        self.assertEqual((await self.sandbox.run(["echo", "ok"])).stdout, b"ok\n")


class AbortTest(SandboxTest):
    async def test_abort_terminates_and_carries_the_partial_result(self) -> None:
        controller = AbortController()
        seen: list[bytes] = []

        def abort_when_ready(chunk: OutputChunk) -> None:
            seen.append(chunk.data)
            if b"ready" in b"".join(seen):
                controller.abort("enough")

        with self.assertRaises(AbortError) as caught:
            await self.sandbox.run(STUBBORN_TREE, signal=controller.signal, on_output=abort_when_ready)
        error = caught.exception
        self.assertEqual(error.cause, "enough")
        assert error.result is not None
        pids = pids_in(error.result.stdout.replace(b"ready", b""))
        self.record(*pids)
        self.assertEqual(len(pids), 2)
        self.assert_gone(pids, "after the abort")
        self.assertEqual(error.result.exit_code, 143)

    async def test_an_already_aborted_signal_starts_nothing(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            marker = Path(directory, "ran")
            touch = ["touch", str(marker)]
            with self.assertRaises(AbortError) as caught:
                await self.sandbox.run(touch, signal=AbortSignal.aborted_with("before"))
            self.assertIsNone(caught.exception.result)
            proc = self.sandbox.stream(touch, signal=AbortSignal.aborted_with("before"))
            self.assertTrue(proc.exited)
            with self.assertRaises(AbortError):
                await proc.wait()
            with self.assertRaises(AbortError):
                [chunk async for chunk in proc]
            await self.sandbox.run(["true"])
            self.assertFalse(marker.exists())

    async def test_abort_of_a_stream_ends_the_loop_with_abort_error_after_its_chunks(self) -> None:
        controller = AbortController()
        async with self.sandbox.stream(["sh", "-c", "echo first; exec sleep 60"], signal=controller.signal) as proc:
            self.record(proc.pid)
            seen = []
            with self.assertRaises(AbortError) as caught:
                async for chunk in proc:
                    seen.append(chunk.data)
                    controller.abort()
            self.assertEqual(seen, [b"first\n"])
            assert caught.exception.result is not None
            self.assertTrue(caught.exception.result.streamed)
            self.assertEqual(caught.exception.result.signal, "SIGTERM")


class CancellationTest(SandboxTest):
    async def test_cancelling_run_terminates_the_tree_before_the_cancellation_arrives(self) -> None:
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
        began = time.monotonic()
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        self.assert_gone(pids, "when the cancelled run() ended")
        self.assertGreaterEqual(time.monotonic() - began, GRACE_MS / 1000 * 0.95)


class ConcurrencyTest(SandboxTest):
    async def test_commands_stay_separate(self) -> None:
        one = self.sandbox.stream(["sh", "-c", "echo one; exec sleep 60"])
        two = self.sandbox.stream(["sh", "-c", "echo two; exec sleep 60"])
        self.record(one.pid, two.pid)
        results = await asyncio.gather(*(self.sandbox.run(["echo", str(i)]) for i in range(20)))
        self.assertEqual([r.stdout for r in results], [f"{i}\n".encode() for i in range(20)])
        await one.kill("SIGKILL")
        self.assertEqual((await one.wait()).signal, "SIGKILL")
        self.assertFalse(two.exited)
        self.assertEqual(b"".join([c.data async for c in one]), b"")  # wait() discarded its output
        async with two:
            chunk = await anext(aiter(two))
        self.assertEqual(chunk.data, b"two\n")
