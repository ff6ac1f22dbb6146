"""Terminals (spec 1.5, capability ``pty``; ADR-0052): a real pseudo-terminal, one exact byte stream,
end-of-file typed, resizes that reach the command, the whole session torn down, the command's own status."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import tempfile
import time
import unittest

from sandstream import (
    CapabilityNotSupported,
    InvalidArgument,
    InvalidState,
    Process,
    TerminalSize,
    create_local_sandbox,
)
from sandstream.wire import run_options, stream_options

from .support import GRACE_MS, SandboxTest, alive, eventually, session_members

SIZE = {"cols": 100, "rows": 30}


class TerminalOptionTest(SandboxTest):
    async def test_the_manifest_declares_pty(self) -> None:
        self.assertIs(self.sandbox.capabilities["pty"], True)

    async def test_the_size_is_checked_under_the_specs_keys(self) -> None:
        bad = [
            ({"cols": 0, "rows": 24}, "options.pty.cols"),
            ({"cols": 80, "rows": 65536}, "options.pty.rows"),
            ({"cols": 80.5, "rows": 24}, "options.pty.cols"),
            ({"cols": True, "rows": 24}, "options.pty.cols"),
            ({"cols": 80}, "options.pty.rows"),
            ({"cols": 80, "rows": 24, "x": 1}, "options.pty.x"),
            ("80x24", "options.pty"),
        ]
        for value, key in bad:
            with self.subTest(value=value):
                with self.assertRaises(InvalidArgument) as caught:
                    self.sandbox.stream(["true"], pty=value)
                self.assertEqual(caught.exception.key, key)
                with self.assertRaises(InvalidArgument) as caught:
                    await self.sandbox.run(["true"], pty=value)
                self.assertEqual(caught.exception.key, key)
        result = await self.sandbox.run(["stty", "size"], pty=TerminalSize(cols=65535, rows=1), timeout=10)
        self.assertEqual(result.stdout, b"1 65535\r\n")

    async def test_the_wire_form_passes_pty_through(self) -> None:
        self.assertEqual(run_options({"pty": SIZE})["pty"], SIZE)
        self.assertEqual(stream_options({"pty": SIZE})["pty"], SIZE)

    async def test_without_the_capability_nothing_starts(self) -> None:
        sandbox = create_local_sandbox(capabilities={"pty": False})
        with self.assertRaises(CapabilityNotSupported) as caught:
            sandbox.stream(["true"], pty=SIZE)
        self.assertEqual(caught.exception.capability, "pty")
        with self.assertRaises(CapabilityNotSupported):
            await sandbox.run(["true"], pty=SIZE)
        await sandbox.close()

    async def test_resize_is_refused_on_pipes_and_checked(self) -> None:
        async with self.sandbox.stream(["sleep", "30"]) as pipes:
            with self.assertRaises(InvalidState):
                await pipes.resize(80, 24)
            self.assertIsNone(pipes.terminal)
        async with self.sandbox.stream(["sleep", "30"], pty=SIZE) as proc:
            for cols, rows, key in ((0, 24, "cols"), (80, 70000, "rows"), ("80", 24, "cols"), (80, None, "rows")):
                with self.assertRaises(InvalidArgument) as caught:
                    await proc.resize(cols, rows)  # type: ignore[arg-type]
                self.assertEqual(caught.exception.key, key)
            self.assertEqual(proc.terminal, TerminalSize(100, 30))
        with self.assertRaises(InvalidState):
            await proc.resize(80, 24)


class TerminalTest(SandboxTest):
    async def test_the_command_is_on_its_own_terminal_of_the_size_asked(self) -> None:
        script = 'tty; stty size; echo "$TERM"; [ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo isatty; ps -o sid=,pgid=,tpgid= -p $$'
        result = await self.sandbox.run(["sh", "-c", script], pty=SIZE, timeout=10)
        self.assertEqual((result.exit_code, result.signal), (0, None))
        lines = result.stdout.decode().split("\r\n")
        self.assertRegex(lines[0], r"^/dev/pts/\d+$")
        self.assertEqual(lines[1:4], ["30 100", "xterm-256color", "isatty"])
        # The command leads the session and the terminal's foreground group.
        self.assertEqual(lines[4].split(), [lines[4].split()[0]] * 3)
        self.assertEqual(result.stderr, b"")
        self.assertFalse(result.stderr_truncated)

    async def test_term_is_the_callers_when_env_sets_it(self) -> None:
        result = await self.sandbox.run(["sh", "-c", 'echo "$TERM"; echo oops >&2'], pty=SIZE, env={"TERM": "vt100"}, timeout=10)
        self.assertEqual(result.stdout, b"vt100\r\noops\r\n")  # one stream: stderr is the terminal too
        self.assertEqual(result.stderr, b"")

    async def test_a_command_that_reads_its_terminal_sees_end_of_file_without_a_writer(self) -> None:
        async with self.sandbox.stream(["cat"], pty=SIZE) as proc:
            self.assertIsNone(proc.stdin)
            result = await asyncio.wait_for(proc.wait(), 10)
        self.assertEqual((result.exit_code, result.signal), (0, None))

    async def test_typed_bytes_then_end_make_cat_print_them_and_exit_0(self) -> None:
        async with self.sandbox.stream(["cat"], stdin="pipe", pty=SIZE) as proc:
            assert proc.stdin is not None
            await proc.stdin.write(b"abc")
            await proc.stdin.end()
            seen = b""
            async for chunk in proc:
                self.assertEqual(chunk.stream, "stdout")
                seen += chunk.data
            result = await asyncio.wait_for(proc.wait(), 10)
        self.assertEqual((result.exit_code, result.signal), (0, None))
        self.assertEqual(seen, b"abcabc")  # the echo, then cat's copy

    async def test_end_on_an_empty_line_types_end_of_file_once(self) -> None:
        # After "b\n" one 0x04 ends cat; a second one would end the shell's next read too.
        script = "cat; echo cat-done; read -r line; echo read-ended"
        async with self.sandbox.stream(["sh", "-c", script], stdin="pipe", pty=SIZE) as proc:
            assert proc.stdin is not None
            await proc.stdin.write(b"a\nb\n")
            await proc.stdin.end()
            iterator = aiter(proc)
            seen = await self.read_until(iterator, b"cat-done")
            with self.assertRaises(asyncio.TimeoutError):
                await self.read_until(iterator, b"read-ended", within=0.5)
            self.assertFalse(proc.exited)
        self.assertEqual(seen.count(b"a\r\n"), 2)  # the echo, then cat's copy

    async def test_one_shot_input_is_typed_and_followed_by_end_of_file(self) -> None:
        result = await self.sandbox.run(["cat"], pty=SIZE, input="abc", timeout=10)
        self.assertEqual((result.exit_code, result.stdout), (0, b"abcabc"))

    async def test_control_c_interrupts_the_foreground_group(self) -> None:
        async with self.sandbox.stream(["sh", "-c", "echo ready; exec sleep 30"], stdin="pipe", pty=SIZE) as proc:
            await self.read_until(aiter(proc), b"ready")
            assert proc.stdin is not None
            await proc.stdin.write(b"\x03")
            result = await asyncio.wait_for(proc.wait(), 10)
        self.assertEqual((result.exit_code, result.signal), (None, "SIGINT"))

    async def test_a_resize_reaches_a_winch_trap(self) -> None:
        script = "trap 'stty size' WINCH; echo ready; while :; do sleep 0.05; done"
        async with self.sandbox.stream(["sh", "-c", script], pty=SIZE) as proc:
            iterator = aiter(proc)
            await self.read_until(iterator, b"ready")
            await proc.resize(120, 40)
            self.assertEqual(proc.terminal, TerminalSize(120, 40))
            await self.read_until(iterator, b"40 120\r\n")
            # In call order: the trap of the last resize reports the last size.
            await proc.resize(1, 1)
            await proc.resize(132, 43)
            await self.read_until(iterator, b"43 132\r\n")
            self.assertEqual(proc.terminal, TerminalSize(132, 43))

    async def test_every_byte_arrives_the_last_included(self) -> None:
        script = "head -c 2000000 /dev/zero | tr '\\0' x; printf MARK"
        for run in range(4):
            with self.subTest(run=run):
                result = await self.sandbox.run(["sh", "-c", script], pty=SIZE, timeout=30)
                self.assertEqual(result.exit_code, 0)
                self.assertEqual(len(result.stdout), 2_000_004)
                self.assertTrue(result.stdout.endswith(b"xMARK"), result.stdout[-20:])
                self.assertEqual(result.stdout.count(b"x"), 2_000_000)
        async with self.sandbox.stream(["sh", "-c", script], pty=SIZE) as proc:
            streamed = b"".join([chunk.data async for chunk in proc])
        self.assertEqual(streamed, b"x" * 2_000_000 + b"MARK")

    async def test_exit_130_and_death_by_sigint_are_told_apart(self) -> None:
        exited = await self.sandbox.run(["sh", "-c", "exit 130"], pty=SIZE, timeout=10)
        killed = await self.sandbox.run(["sh", "-c", "kill -INT $$"], pty=SIZE, timeout=10)
        self.assertEqual((exited.exit_code, exited.signal), (130, None))
        self.assertEqual((killed.exit_code, killed.signal), (None, "SIGINT"))

    async def test_output_cap_and_on_output_see_the_one_stream(self) -> None:
        seen: list[str] = []
        result = await self.sandbox.run(["sh", "-c", "echo 0123456789; echo err >&2"], pty=SIZE, timeout=10,
                                        max_output_bytes=4, on_output=lambda chunk: seen.append(chunk.stream))
        self.assertEqual(result.stdout, b"0123")
        self.assertTrue(result.stdout_truncated)
        self.assertEqual(set(seen), {"stdout"})


class TerminalTeardownTest(SandboxTest):
    async def test_a_command_ignoring_hup_and_term_is_gone_after_disposal(self) -> None:
        script = "trap '' HUP TERM; echo $$; sleep 30 & echo $!; echo ready; wait"
        proc: Process
        async with self.sandbox.stream(["sh", "-c", script], pty=SIZE) as proc:
            seen = await self.read_until(aiter(proc), b"ready")
            pids = [int(word) for word in re.findall(rb"\d+", seen)][:2]
            self.record(*pids)
            self.assertEqual(pids[0], proc.pid)
            began = time.monotonic()
        took = time.monotonic() - began
        self.assert_gone(pids, "after disposal")
        self.assertGreaterEqual(took, GRACE_MS / 1000 * 0.95, "SIGKILL came before the grace period ended")
        self.assertLess(took, GRACE_MS / 1000 + 3)
        result = await proc.wait()
        self.assertEqual(result.signal, "SIGKILL")

    async def test_a_job_of_an_interactive_shell_is_gone_after_disposal(self) -> None:
        if shutil.which("bash") is None:
            self.skipTest("no bash")
        with tempfile.TemporaryDirectory() as home:
            # An empty HOME: no rc file, no history, nothing of this machine's login setup.
            env = {"HOME": home, "PS1": "$ ", "HISTFILE": "/dev/null"}
            async with self.sandbox.stream(["bash", "--norc", "--noprofile", "-i"], stdin="pipe", pty=SIZE, env=env) as proc:
                assert proc.stdin is not None
                iterator = aiter(proc)
                await proc.stdin.write(b"sleep 31 & echo JOB=$!; echo GROUP=$(ps -o pgid= -p $!)\n")
                seen = b""
                while re.search(rb"GROUP=\s*\d+\r\n", seen) is None:
                    seen += (await asyncio.wait_for(anext(iterator), 10)).data
                job = int(re.findall(rb"JOB=(\d+)", seen)[-1])
                self.record(job)
                group = int(re.findall(rb"GROUP=\s*(\d+)", seen)[-1])
                # The job leads a group of its own in the shell's session: a group-wide teardown would miss it.
                self.assertEqual(group, job)
                self.assertNotEqual(group, proc.pid)
                self.assertIn((job, job), session_members(proc.pid or 0))
                began = time.monotonic()
            took = time.monotonic() - began
        self.assert_gone([job], "the interactive shell's job after disposal")
        self.assertEqual(session_members(proc.pid or 0), [])
        # SIGHUP ends the shell and its jobs: no grace period waited out.
        self.assertLess(took, GRACE_MS / 1000 + 0.2 + 2)

    async def test_jobs_left_by_an_exited_leader_are_wound_down(self) -> None:
        script = "sh -c 'trap \"\" HUP TERM; echo $$; exec sleep 30' & sleep 0.2; exit 7"
        async with self.sandbox.stream(["sh", "-c", script], pty=SIZE) as proc:
            chunks = [chunk.data async for chunk in proc]
            result = await asyncio.wait_for(proc.wait(), 10)
        pids = [int(word) for word in re.findall(rb"\d+", b"".join(chunks))]
        self.record(*pids)
        self.assertEqual((result.exit_code, result.signal), (7, None))
        self.assert_gone(pids, "the leader's job after its exit")

    async def test_a_timeout_ends_the_session(self) -> None:
        script = "trap '' HUP TERM; sleep 30 & echo $!; wait"
        result = await self.sandbox.run(["sh", "-c", script], pty=SIZE, timeout=0.5)
        pids = [int(word) for word in re.findall(rb"\d+", result.stdout)]
        self.record(*pids)
        self.assertTrue(result.timed_out)
        self.assert_gone(pids, "after the timeout")

    async def test_sandbox_close_ends_every_session(self) -> None:
        proc = self.sandbox.stream(["sh", "-c", "trap '' HUP TERM; echo ready; exec sleep 30"], pty=SIZE)
        await self.read_until(aiter(proc), b"ready")
        pid = proc.pid
        self.record(pid)
        await self.sandbox.close()
        self.assertTrue(proc.exited)
        self.assertFalse(alive(pid or 0))
        await proc.aclose()


class TerminalStressTest(SandboxTest):
    async def test_many_short_commands_release_their_terminals(self) -> None:
        before = len(os.listdir("/proc/self/fd"))
        for _ in range(20):
            result = await self.sandbox.run(["true"], pty=SIZE, timeout=10)
            self.assertEqual(result.exit_code, 0)
        self.assertTrue(await eventually(lambda: len(os.listdir("/proc/self/fd")) <= before + 2, 5))


if __name__ == "__main__":
    unittest.main()
