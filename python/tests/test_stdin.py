"""Standard input (spec section 6.4): the writer, one-shot input, end-of-file, a reader that went away."""

from __future__ import annotations

import asyncio
import os
import random
import sys

from sandstream import InvalidArgument, StdinClosed

from .support import SandboxTest

PY = sys.executable
# Larger than any pipe buffer (64 KiB by default, 1 MiB at most unprivileged).
LARGE = random.Random(3).randbytes(3 * 1024 * 1024 + 17)


class StdinWriterTest(SandboxTest):
    async def test_writes_arrive_in_call_order_and_end_delivers_eof(self) -> None:
        async with self.sandbox.stream(["cat"], stdin="pipe") as proc:
            assert proc.stdin is not None
            self.assertFalse(proc.stdin.closed)
            # Not awaited one by one: order is still the call order.
            await asyncio.gather(*(proc.stdin.write(f"{i},") for i in range(200)), proc.stdin.write(b"\xff"))
            await proc.stdin.end()
            self.assertTrue(proc.stdin.closed)
            data = b"".join([chunk.data async for chunk in proc])
            result = await proc.wait()
        self.assertEqual(data, "".join(f"{i}," for i in range(200)).encode() + b"\xff")
        self.assertEqual(result.exit_code, 0)

    async def test_a_write_larger_than_the_pipe_waits_for_the_reader(self) -> None:
        async with self.sandbox.stream(["cat"], stdin="pipe") as proc:
            assert proc.stdin is not None

            async def feed() -> None:
                assert proc.stdin is not None
                await proc.stdin.write(LARGE)
                await proc.stdin.end()

            feeding = asyncio.create_task(feed())
            data = b"".join([chunk.data async for chunk in proc if chunk.stream == "stdout"])
            await feeding
        self.assertEqual(data, LARGE)

    async def test_write_after_end_or_exit_raises_stdin_closed(self) -> None:
        async with self.sandbox.stream(["cat"], stdin="pipe") as proc:
            assert proc.stdin is not None
            await proc.stdin.end()
            await proc.stdin.end()  # idempotent
            with self.assertRaises(StdinClosed):
                await proc.stdin.write(b"late")
            await proc.wait()
        async with self.sandbox.stream(["true"], stdin="pipe") as proc:
            await proc.wait()
            assert proc.stdin is not None
            self.assertTrue(proc.stdin.closed)
            with self.assertRaises(StdinClosed):
                await proc.stdin.write(b"after the exit")
            await proc.stdin.end()  # never fails because the command exited

    async def test_a_command_that_stopped_reading_makes_write_fail_not_hang(self) -> None:
        # It closes its standard input and stays alive.
        async with self.sandbox.stream(["sh", "-c", "exec 0<&-; echo closed; exec sleep 60"], stdin="pipe") as proc:
            self.record(proc.pid)
            await self.read_until(aiter(proc), b"closed")
            assert proc.stdin is not None
            with self.assertRaises(StdinClosed):
                await asyncio.wait_for(proc.stdin.write(LARGE), 10)
            self.assertTrue(proc.stdin.closed)

    async def test_a_pending_write_fails_once_the_reader_goes_away(self) -> None:
        # The command reads a little, then closes its input while our large write waits for room.
        script = "head -c 10 >/dev/null; exec 0<&-; echo closed; exec sleep 60"
        async with self.sandbox.stream(["sh", "-c", script], stdin="pipe") as proc:
            self.record(proc.pid)
            assert proc.stdin is not None
            with self.assertRaises(StdinClosed):
                await asyncio.wait_for(proc.stdin.write(LARGE), 10)

    async def test_write_takes_bytes_or_str_only(self) -> None:
        async with self.sandbox.stream(["cat"], stdin="pipe") as proc:
            assert proc.stdin is not None
            with self.assertRaises(InvalidArgument) as caught:
                await proc.stdin.write(42)  # type: ignore[arg-type]
            self.assertEqual(caught.exception.key, "data")
            await proc.stdin.write(memoryview(b"view "))
            await proc.stdin.write(bytearray(b"array"))
            await proc.stdin.end()
            self.assertEqual(b"".join([c.data async for c in proc]), b"view array")


class InputTest(SandboxTest):
    async def test_run_input_larger_than_a_pipe_buffer_then_eof(self) -> None:
        result = await self.sandbox.run(["cat"], input=LARGE)
        self.assertEqual(result.stdout, LARGE)
        text = await self.sandbox.run(["cat"], input="héllo \ud800")
        self.assertEqual(text.stdout, "héllo \ufffd".encode())

    async def test_stream_input_gives_no_writer(self) -> None:
        async with self.sandbox.stream(["wc", "-c"], input=LARGE) as proc:
            self.assertIsNone(proc.stdin)
            data = b"".join([chunk.data async for chunk in proc])
        self.assertEqual(int(data), len(LARGE))

    async def test_input_the_command_does_not_read_is_no_error(self) -> None:
        result = await self.sandbox.run(["sh", "-c", "exit 0"], input=LARGE)
        self.assertEqual((result.exit_code, result.signal), (0, None))

    async def test_without_input_standard_input_is_at_eof(self) -> None:
        # The null device, whatever this process's own standard input is: here a pipe nobody writes.
        saved = os.dup(0)
        read_end, write_end = os.pipe()
        os.dup2(read_end, 0)
        try:
            result = await self.sandbox.run(["readlink", "/proc/self/fd/0"])
            async with self.sandbox.stream(["readlink", "/proc/self/fd/0"]) as proc:
                streamed = b"".join([chunk.data async for chunk in proc])
        finally:
            os.dup2(saved, 0)
            for fd in (saved, read_end, write_end):
                os.close(fd)
        self.assertEqual((result.stdout, streamed), (b"/dev/null\n", b"/dev/null\n"))
        result = await asyncio.wait_for(self.sandbox.run(["cat"]), 10)
        self.assertEqual((result.exit_code, result.stdout), (0, b""))
        async with self.sandbox.stream(["sh", "-c", "cat; echo done"]) as proc:
            data = b"".join([chunk.data async for chunk in proc])
        self.assertEqual(data, b"done\n")

    async def test_no_descriptor_is_left_open(self) -> None:
        before = set(os.listdir("/proc/self/fd"))
        for _ in range(5):
            await self.sandbox.run(["cat"], input=b"x")
            async with self.sandbox.stream(["cat"], stdin="pipe") as proc:
                pass
            await proc.wait()
        self.assertEqual(set(os.listdir("/proc/self/fd")), before)
