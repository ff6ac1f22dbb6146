"""Teardown on every way out (spec section 9): the whole process group, SIGTERM first, SIGKILL after the grace period.

Every case runs a tree whose leader traps SIGTERM and whose grandchild
ignores it, and checks /proc right after teardown returned: a leader-only
kill leaves the grandchild running, SIGKILL at once skips the leader's trap
(exit code 143) and the grace period, and a teardown that returned early
finds the grandchild still alive.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import tempfile
import time
from pathlib import Path
from unittest import mock

from sandstream import ExecResult, Process, TransportError, create_local_sandbox

from .support import GRACE_MS, STUBBORN_TREE, SandboxTest, alive, eventually, group_members, pids_in


class Boom(Exception):
    pass


class TeardownPathsTest(SandboxTest):
    async def start_tree(self) -> tuple[Process, list[int], object]:
        proc = self.sandbox.stream(STUBBORN_TREE)
        iterator = aiter(proc)
        pids = pids_in((await self.read_until(iterator, b"ready")).replace(b"ready", b""))
        self.record(*pids)
        self.assertEqual(len(pids), 2)
        self.assertEqual(pids[0], proc.pid)
        self.assertTrue(all(alive(pid) for pid in pids))
        return proc, pids, iterator

    async def check_torn_down(self, proc: Process, pids: list[int], began: float) -> ExecResult:
        took = time.monotonic() - began
        self.assert_gone(pids, "after teardown")
        self.assertTrue(proc.exited)
        # The grandchild ignores SIGTERM: only SIGKILL, after the grace period, ends it.
        self.assertGreaterEqual(took, GRACE_MS / 1000 * 0.95, "SIGKILL came before the grace period ended")
        self.assertLess(took, GRACE_MS / 1000 + 2, "teardown took far longer than the grace period")
        result = await proc.wait()
        # The leader got SIGTERM first and its trap ran.
        self.assertEqual((result.exit_code, result.signal), (143, None))
        self.assertTrue(result.streamed)
        return result

    async def test_leaving_the_block_normally(self) -> None:
        async with self.sandbox.stream(STUBBORN_TREE) as proc:
            iterator = aiter(proc)
            pids = pids_in((await self.read_until(iterator, b"ready")).replace(b"ready", b""))
            self.record(*pids)
            began = time.monotonic()
        await self.check_torn_down(proc, pids, began)

    async def test_an_exception_in_the_block(self) -> None:
        began = 0.0
        with self.assertRaises(Boom):
            async with self.sandbox.stream(STUBBORN_TREE) as proc:
                pids = pids_in((await self.read_until(aiter(proc), b"ready")).replace(b"ready", b""))
                self.record(*pids)
                began = time.monotonic()
                raise Boom()
        await self.check_torn_down(proc, pids, began)

    async def test_break_out_of_the_loop(self) -> None:
        pids: list[int] = []
        async with self.sandbox.stream(STUBBORN_TREE) as proc:
            seen = b""
            async for chunk in proc:
                seen += chunk.data
                if b"ready" in seen:
                    break
            pids = pids_in(seen.replace(b"ready", b""))
            self.record(*pids)
            began = time.monotonic()
        await self.check_torn_down(proc, pids, began)

    async def test_cancellation_of_the_task(self) -> None:
        box: dict[str, object] = {}
        ready = asyncio.Event()

        async def body() -> None:
            async with self.sandbox.stream(STUBBORN_TREE) as proc:
                box["proc"] = proc
                box["pids"] = pids_in((await self.read_until(aiter(proc), b"ready")).replace(b"ready", b""))
                self.record(*box["pids"])  # type: ignore[arg-type]
                ready.set()
                await asyncio.sleep(60)

        task = asyncio.create_task(body())
        await ready.wait()
        began = time.monotonic()
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        await self.check_torn_down(box["proc"], box["pids"], began)  # type: ignore[arg-type]

    async def test_cancelled_twice_during_teardown_still_completes(self) -> None:
        box: dict[str, object] = {}
        ready = asyncio.Event()

        async def body() -> None:
            async with self.sandbox.stream(STUBBORN_TREE) as proc:
                box["proc"] = proc
                box["pids"] = pids_in((await self.read_until(aiter(proc), b"ready")).replace(b"ready", b""))
                self.record(*box["pids"])  # type: ignore[arg-type]
                ready.set()
                await asyncio.sleep(60)

        task = asyncio.create_task(body())
        await ready.wait()
        began = time.monotonic()
        task.cancel()
        await asyncio.sleep(0.05)  # teardown is under way; cancel its awaiting task again
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        await self.check_torn_down(box["proc"], box["pids"], began)  # type: ignore[arg-type]

    async def test_asyncio_timeout(self) -> None:
        began = 0.0
        with self.assertRaises(TimeoutError):
            async with asyncio.timeout(None) as deadline:
                async with self.sandbox.stream(STUBBORN_TREE) as proc:
                    pids = pids_in((await self.read_until(aiter(proc), b"ready")).replace(b"ready", b""))
                    self.record(*pids)
                    began = time.monotonic()
                    deadline.reschedule(asyncio.get_running_loop().time() + 0.01)
                    await asyncio.sleep(60)
        await self.check_torn_down(proc, pids, began + 0.01)

    async def test_explicit_aclose_and_contextlib_aclosing(self) -> None:
        proc, pids, _ = await self.start_tree()
        began = time.monotonic()
        await proc.aclose()
        await self.check_torn_down(proc, pids, began)
        await proc.aclose()  # idempotent
        proc, pids, _ = await self.start_tree()
        began = time.monotonic()
        async with contextlib.aclosing(proc):
            pass
        await self.check_torn_down(proc, pids, began)

    async def test_cancelling_a_task_awaiting_wait(self) -> None:
        proc, pids, _ = await self.start_tree()
        waiter = asyncio.create_task(proc.wait())
        await asyncio.sleep(0)
        began = time.monotonic()
        waiter.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await waiter
        await self.check_torn_down(proc, pids, began)

    async def test_close_of_the_sandbox_reaches_a_process_never_iterated(self) -> None:
        never_read = self.sandbox.stream(STUBBORN_TREE, stdin="pipe")
        leader = never_read.pid
        assert leader is not None
        self.record(leader)
        # Up once its grandchild joined the group (nothing of it is read).
        self.assertTrue(await eventually(lambda: len(group_members(leader)) == 2))
        self.record(*group_members(leader))
        first, first_pids, _ = await self.start_tree()
        second, second_pids, _ = await self.start_tree()
        began = time.monotonic()
        await self.sandbox.close()
        took = time.monotonic() - began
        self.assertEqual(group_members(leader), [], "the never-iterated command's group outlived close()")
        self.assert_gone(first_pids + second_pids, "after close()")
        # Concurrently: one grace period for all three, not one each (which would take three).
        self.assertLess(took, GRACE_MS / 1000 * 2.8, "close() terminated the commands one after another")
        self.assertTrue(never_read.exited and first.exited and second.exited)
        await self.sandbox.close()  # idempotent


class TimeoutOptionTest(SandboxTest):
    async def test_run_timeout_terminates_the_tree_and_keeps_the_output(self) -> None:
        began = time.monotonic()
        result = await self.sandbox.run(STUBBORN_TREE, timeout=1.0)
        pids = pids_in(result.stdout.replace(b"ready", b""))
        self.record(*pids)
        self.assert_gone(pids, "after the timeout")
        self.assertTrue(result.timed_out)
        self.assertEqual((result.exit_code, result.signal), (143, None))
        self.assertIn(b"ready", result.stdout)
        self.assertGreaterEqual(time.monotonic() - began, 1.0 + GRACE_MS / 1000 * 0.95)

    async def test_stream_timeout_ends_iteration_normally(self) -> None:
        async with self.sandbox.stream(["sh", "-c", "echo partial; exec sleep 60"], timeout=0.5) as proc:
            chunks = [chunk.data async for chunk in proc]
            result = await proc.wait()
        self.assertEqual(b"".join(chunks), b"partial\n")
        self.assertEqual((result.timed_out, result.exit_code, result.signal), (True, None, "SIGTERM"))
        self.assertGreaterEqual(result.duration_ms, 500)


class LeaderExitTest(SandboxTest):
    async def test_a_child_left_holding_the_pipes_does_not_hold_the_result(self) -> None:
        result = await asyncio.wait_for(self.sandbox.run(["sh", "-c", "sleep 60 & echo $!"]), 10)
        child = pids_in(result.stdout)
        self.record(*child)
        self.assert_gone(child, "after the leader's result")
        self.assertEqual((result.exit_code, result.signal), (0, None))

    async def test_a_child_that_ignores_sigterm_gets_the_grace_period_then_sigkill(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            # The leader exits once its child ignores SIGTERM (and has let go of the pipes).
            script = (
                "sh -c 'trap \"\" TERM; echo $$ > \"$1\"; exec sleep 60' sh \"$0/pid\" >/dev/null 2>&1 & "
                "until [ -s \"$0/pid\" ]; do sleep 0.01; done"
            )
            began = time.monotonic()
            result = await asyncio.wait_for(self.sandbox.run(["sh", "-c", script, directory]), 10)
            child = pids_in(Path(directory, "pid").read_text())
        self.record(*child)
        self.assert_gone(child, "when the result was reported")
        self.assertGreaterEqual(time.monotonic() - began, GRACE_MS / 1000 * 0.95)
        # The leader exited by itself: not a timeout, and its own status.
        self.assertEqual((result.exit_code, result.signal, result.timed_out), (0, None, False))

    async def test_a_leader_that_exits_within_its_timeout_is_not_timed_out(self) -> None:
        # The timeout expires while the leader's child is wound down (its grace period is longer).
        with tempfile.TemporaryDirectory() as directory:
            script = (
                "sh -c 'trap \"\" TERM; echo $$ > \"$1\"; exec sleep 60' sh \"$0/pid\" & "
                "until [ -s \"$0/pid\" ]; do sleep 0.01; done; exit 4"
            )
            async with create_local_sandbox(grace_ms=1500) as sandbox:
                began = time.monotonic()
                result = await asyncio.wait_for(sandbox.run(["sh", "-c", script, directory], timeout=0.5), 10)
                self.record(*pids_in(Path(directory, "pid").read_text()))
        self.assertGreater(time.monotonic() - began, 1.5)
        self.assertEqual((result.exit_code, result.signal, result.timed_out), (4, None, False))


    async def test_a_process_that_left_the_group_does_not_hold_the_result(self) -> None:
        # setsid leaves the containment (documented); it holds the pipes, yet the result comes.
        result = await asyncio.wait_for(self.sandbox.run(["sh", "-c", "setsid sleep 60 & echo $!"]), 10)
        escaped = pids_in(result.stdout)
        self.record(*escaped)
        self.assertEqual((result.exit_code, result.signal), (0, None))


class LostEndTest(SandboxTest):
    async def test_an_end_never_seen_after_sigkill_is_a_transport_error(self) -> None:
        # White box: a group member that never dies, which no real process manages.
        async with create_local_sandbox(grace_ms=50, kill_wait_ms=200) as sandbox:
            with mock.patch("sandstream._group.CommandTree.alive", return_value=True):
                proc = sandbox.stream(["sleep", "60"])
                self.record(proc.pid)
                with self.assertRaises(TransportError) as caught:
                    await proc.aclose()
                self.assertIn("within 200 ms of SIGKILL", str(caught.exception))
                with self.assertRaises(TransportError):
                    await proc.wait()
                self.assertTrue(proc.exited)


class SequenceTest(SandboxTest):
    async def test_a_stopped_command_is_continued_so_sigterm_ends_it(self) -> None:
        async with create_local_sandbox() as sandbox:  # a 2 s grace period: far from a quick end
            proc = sandbox.stream(["sleep", "60"])
            self.record(proc.pid)
            await proc.kill("SIGSTOP")
            began = time.monotonic()
            await proc.aclose()
            self.assertLess(time.monotonic() - began, 1.5, "SIGCONT did not follow SIGTERM")
        result = await proc.wait()
        self.assertEqual((result.exit_code, result.signal), (None, "SIGTERM"))

    async def test_a_command_that_exits_on_sigterm_ends_without_waiting_for_the_grace_period(self) -> None:
        async with create_local_sandbox() as sandbox:
            slow = sandbox.stream(["sleep", "60"])
            self.record(slow.pid)
            began = time.monotonic()
            await slow.aclose()
            self.assertLess(time.monotonic() - began, 1.5)
        self.assertEqual((await slow.wait()).signal, "SIGTERM")

    async def test_kill_sends_one_signal_to_the_group(self) -> None:
        async with self.sandbox.stream(STUBBORN_TREE) as proc:
            iterator = aiter(proc)
            pids = pids_in((await self.read_until(iterator, b"ready")).replace(b"ready", b""))
            self.record(*pids)
            await proc.kill("SIGKILL")
            rest = [chunk async for chunk in iterator]
            self.assertEqual(rest, [])
            result = await proc.wait()
            self.assert_gone(pids, "after kill('SIGKILL') to the group")
        self.assertEqual((result.exit_code, result.signal), (None, "SIGKILL"))
        await proc.kill(signal.Signals.SIGTERM.name)  # no effect once exited
