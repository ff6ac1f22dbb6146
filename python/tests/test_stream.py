"""stream() and the Process (spec sections 6 to 8): start, bytes, ordering, wait(), iteration, kill()."""

from __future__ import annotations

import asyncio
import random
import sys

from sandstream import ExecResult, InvalidArgument, InvalidState, SpawnFailed

from .support import SandboxTest

PY = sys.executable

# Writes all 256 byte values, then invalid UTF-8 and a split multibyte character, to both streams.
ALL_BYTES = bytes(range(256)) + b"\xc3\x28\xed\xa0\x80" + "✓".encode()[:2]
WRITE_ALL_BYTES = (
    "import os, sys; data = bytes(range(256)) + b'\\xc3\\x28\\xed\\xa0\\x80' + '✓'.encode()[:2]; "
    "os.write(1, data); os.write(2, data)"
)

# 1.5 MiB on each stream in writes of varied sizes; the bytes are seeded, so the test knows them.
SIZE = 3 * 512 * 1024
PATTERN = (
    "import os, random\n"
    f"out, err = random.Random(1).randbytes({SIZE}), random.Random(2).randbytes({SIZE})\n"
    "o = e = 0\n"
    "step = 1\n"
    "while o < len(out) or e < len(err):\n"
    "    n = step % 70000 + 1; step = step * 31 + 7\n"
    "    if o < len(out): o += os.write(1, out[o:o + n])\n"
    "    if e < len(err): e += os.write(2, err[e:e + n])\n"
)


def expected(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


class StreamBasicsTest(SandboxTest):
    async def test_start_identity_and_result(self) -> None:
        async with self.sandbox.stream(["sh", "-c", "echo out; echo err >&2; exit 3"]) as proc:
            self.record(proc.pid)
            await proc.started()
            self.assertIsInstance(proc.pid, int)
            self.assertEqual(proc.command_id, str(proc.pid))
            self.assertEqual(proc.argv, ("sh", "-c", "echo out; echo err >&2; exit 3"))
            self.assertIsNone(proc.stdin)
            chunks = [chunk async for chunk in proc]
            result = await proc.wait()
            self.assertTrue(proc.exited)
        self.assertEqual(b"".join(c.data for c in chunks if c.stream == "stdout"), b"out\n")
        self.assertEqual(b"".join(c.data for c in chunks if c.stream == "stderr"), b"err\n")
        self.assertEqual((result.exit_code, result.signal, result.streamed), (3, None, True))
        self.assertEqual((result.stdout, result.stderr, result.stdout_truncated), (b"", b"", False))
        self.assertEqual(await proc.wait(), result)  # idempotent

    async def test_the_start_happens_in_stream_itself(self) -> None:
        proc = self.sandbox.stream(["sh", "-c", "exit 0"])
        self.assertIsNotNone(proc.pid)  # started before any await
        self.assertEqual((await proc.wait()).exit_code, 0)

    async def test_a_process_is_not_awaitable(self) -> None:
        async with self.sandbox.stream(["true"]) as proc:
            with self.assertRaises(TypeError):
                await proc  # type: ignore[misc]

    async def test_a_second_iteration_raises_invalid_state(self) -> None:
        async with self.sandbox.stream(["echo", "x"]) as proc:
            [chunk async for chunk in proc]
            with self.assertRaises(InvalidState):
                aiter(proc)

    async def test_exit_code_xor_signal(self) -> None:
        cases = [
            (["sh", "-c", "exit 7"], (7, None)),
            (["sh", "-c", "exit 255"], (255, None)),
            (["sh", "-c", "kill -KILL $$"], (None, "SIGKILL")),
            (["sh", "-c", "kill -USR1 $$"], (None, "SIGUSR1")),
            # A handler that catches the signal and exits reports its exit code, not the signal.
            (["sh", "-c", "trap 'exit 5' TERM; kill -TERM $$; sleep 5"], (5, None)),
        ]
        for argv, status in cases:
            with self.subTest(argv[-1]):
                async with self.sandbox.stream(argv) as proc:
                    result = await proc.wait()
                self.assertEqual((result.exit_code, result.signal), status)
                self.assertEqual(ExecResult.from_wire(result.to_wire()), result)

    async def test_a_missing_program_fails_the_start_not_the_call(self) -> None:
        proc = self.sandbox.stream(["no-such-program-here", "x"])
        self.assertTrue(proc.exited)
        self.assertIsNone(proc.pid)
        with self.assertRaises(SpawnFailed) as caught:
            await proc.started()
        self.assertEqual(caught.exception.argv, ("no-such-program-here", "x"))
        self.assertIsInstance(caught.exception.__cause__, FileNotFoundError)
        with self.assertRaises(SpawnFailed):
            await proc.wait()
        with self.assertRaises(SpawnFailed):
            [chunk async for chunk in proc]
        await proc.aclose()  # settled: resolves at once

    async def test_kill_validates_the_signal_name(self) -> None:
        async with self.sandbox.stream(["sleep", "60"]) as proc:
            self.record(proc.pid)
            with self.assertRaises(InvalidArgument) as caught:
                await proc.kill("SIGSEGV")
            self.assertEqual(caught.exception.key, "signal")
            await proc.kill("SIGUSR2")
            self.assertEqual((await proc.wait()).signal, "SIGUSR2")


class BytesTest(SandboxTest):
    async def test_all_256_byte_values_and_invalid_utf8_on_both_streams(self) -> None:
        async with self.sandbox.stream([PY, "-c", WRITE_ALL_BYTES]) as proc:
            chunks = [chunk async for chunk in proc]
        for name in ("stdout", "stderr"):
            self.assertEqual(b"".join(c.data for c in chunks if c.stream == name), ALL_BYTES, name)
        result = await self.sandbox.run([PY, "-c", WRITE_ALL_BYTES])
        self.assertEqual((result.stdout, result.stderr), (ALL_BYTES, ALL_BYTES))

    async def test_one_and_a_half_mib_through_both_streams_in_order(self) -> None:
        async with self.sandbox.stream([PY, "-c", PATTERN]) as proc:
            parts: dict[str, list[bytes]] = {"stdout": [], "stderr": []}
            async for chunk in proc:
                parts[chunk.stream].append(chunk.data)
            result = await proc.wait()
        self.assertEqual(result.exit_code, 0)
        self.assertEqual(b"".join(parts["stdout"]), expected(SIZE, 1))
        self.assertEqual(b"".join(parts["stderr"]), expected(SIZE, 2))
        run = await self.sandbox.run([PY, "-c", PATTERN])
        self.assertEqual((run.stdout, run.stderr), (expected(SIZE, 1), expected(SIZE, 2)))

    async def test_a_last_line_without_newline_is_delivered(self) -> None:
        async with self.sandbox.stream(["printf", "one\ntwo"]) as proc:
            data = b"".join([chunk.data async for chunk in proc])
        self.assertEqual(data, b"one\ntwo")

    async def test_argv_reaches_the_command_byte_exact(self) -> None:
        hostile = ["it's \"quoted\"", "$(touch pwned)", "`x`", "line\nline", "*", "", " spaced ", "-n",
                   "héllo ✓ 🙂", "\t\r\x01"]
        result = await self.sandbox.run(["printf", "%s\\000", *hostile])
        self.assertEqual(result.stdout.split(b"\0")[:-1], [item.encode() for item in hostile])
        raw = await self.sandbox.run([b"printf", b"%s", b"\xff\xfe"])
        self.assertEqual(raw.stdout, b"\xff\xfe")
        # A lone surrogate has no UTF-8 form: it arrives as U+FFFD.
        lone = await self.sandbox.run(["printf", "%s", "a\ud800b"])
        self.assertEqual(lone.stdout, "a\ufffdb".encode())


class OrderingTest(SandboxTest):
    async def test_order_within_each_stream_and_no_byte_in_the_wrong_one(self) -> None:
        script = "for i in $(seq 1 400); do echo o$i; echo e$i >&2; done"
        async with self.sandbox.stream(["sh", "-c", script]) as proc:
            data = {"stdout": b"", "stderr": b""}
            async for chunk in proc:
                data[chunk.stream] += chunk.data
        self.assertEqual(data["stdout"].split(), [f"o{i}".encode() for i in range(1, 401)])
        self.assertEqual(data["stderr"].split(), [f"e{i}".encode() for i in range(1, 401)])


class WaitTest(SandboxTest):
    async def test_wait_drains_unread_output_and_does_not_hang(self) -> None:
        # 16 MiB, four high-water marks, with no reader: wait() discards it.
        proc = self.sandbox.stream(["head", "-c", str(16 * 1024 * 1024), "/dev/zero"])
        result = await asyncio.wait_for(proc.wait(), 20)
        self.assertEqual(result.exit_code, 0)
        await proc.aclose()

    async def test_a_loop_that_is_iterating_keeps_every_chunk_while_wait_is_awaited(self) -> None:
        size = 6 * 1024 * 1024
        async with self.sandbox.stream(["head", "-c", str(size), "/dev/urandom"]) as proc:
            received = 0

            async def read() -> None:
                nonlocal received
                async for chunk in proc:
                    received += len(chunk.data)
                    await asyncio.sleep(0)  # a reader slower than the command

            reader = asyncio.create_task(read())
            await asyncio.sleep(0)
            result = await asyncio.wait_for(proc.wait(), 20)
            await asyncio.wait_for(reader, 20)
        self.assertEqual(result.exit_code, 0)
        self.assertEqual(received, size)
