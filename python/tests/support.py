"""What the tests share: a sandbox per test, observing processes through /proc, and cleaning up by pid."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import unittest
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path

from sandstream import LocalSandbox, OutputChunk, create_local_sandbox

#: The repository's spec revision, for the tests that hold the wire forms to its schema and fixtures.
SPEC_DIR = Path(__file__).resolve().parents[2] / "spec" / "1.5"

#: A grace period short enough for a quick suite, long enough for a shell's trap to run.
GRACE_MS = 300
KILL_WAIT_MS = 3000


def proc_state(pid: int) -> str | None:
    """The state letter of a process in /proc, or None when it does not exist."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            stat = file.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat[stat.rfind(b")") + 2 :].split(b" ", 1)[0].decode()


def alive(pid: int) -> bool:
    """True while the process runs code: it exists and is neither a zombie nor dead."""
    return proc_state(pid) not in (None, "Z", "X")


def live_processes() -> list[tuple[int, list[bytes]]]:
    """(pid, the fields of /proc/PID/stat after the command name) of every live process."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as file:
                stat = file.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split(b" ")
        if fields[0] not in (b"Z", b"X"):
            found.append((int(entry), fields))
    return found


def group_members(pgid: int) -> list[int]:
    """The live processes of a process group, as /proc lists them."""
    return [pid for pid, fields in live_processes() if int(fields[2]) == pgid]


def session_members(sid: int) -> list[tuple[int, int]]:
    """(pid, process group) of the live members of session ``sid``, as /proc lists them."""
    return [(pid, int(fields[2])) for pid, fields in live_processes() if int(fields[3]) == sid]


async def eventually(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Bounded polling until ``condition()`` holds; returns whether it did."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.005)
    return True


def pids_in(text: bytes | str) -> list[int]:
    """The pids a test command printed, one a line."""
    if isinstance(text, bytes):
        text = text.decode()
    return [int(word) for word in text.split()]


def kill_if_alive(pid: int) -> None:
    """Cleanup by pid, never by name: SIGKILL a process this test started, if it still runs."""
    if alive(pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# A command whose process group holds a grandchild that ignores SIGTERM: it
# prints the leader's pid, then the grandchild's, then "ready", and waits.
# The leader has a TERM trap so that it would exit at once, leaving the
# grandchild behind if teardown reached only the leader.
STUBBORN_TREE = [
    "sh",
    "-c",
    "trap 'exit 143' TERM; echo $$; "
    "sh -c 'trap \"\" TERM; echo $$; echo ready; exec sleep 60' & "
    "wait",
]


class SandboxTest(unittest.IsolatedAsyncioTestCase):
    """A fresh sandbox per test with a short grace period; every pid a test records is killed afterwards."""

    sandbox: LocalSandbox

    async def asyncSetUp(self) -> None:
        # unittest runs the loop in debug mode, which logs any step over 0.1 s; a fork
        # and exec on a loaded machine can take that long without anything being wrong.
        asyncio.get_running_loop().slow_callback_duration = 1.0
        self.sandbox = create_local_sandbox(grace_ms=GRACE_MS, kill_wait_ms=KILL_WAIT_MS)
        self._pids: list[int] = []
        self.addCleanup(self._kill_recorded)

    async def asyncTearDown(self) -> None:
        await self.sandbox.close()

    def record(self, *pids: int | None) -> None:
        """Remembers pids this test started, to be killed if a failing test left them running."""
        self._pids.extend(pid for pid in pids if pid is not None)

    def _kill_recorded(self) -> None:
        for pid in self._pids:
            kill_if_alive(pid)

    async def read_until(self, iterator: AsyncIterator[OutputChunk], marker: bytes, stream: str = "stdout",
                         within: float = 10) -> bytes:
        """Reads chunks of one stream until ``marker`` appeared (each chunk bounded by ``within`` s); returns what was read."""
        seen = b""
        while marker not in seen:
            chunk: OutputChunk = await asyncio.wait_for(anext(iterator), within)
            if chunk.stream == stream:
                seen += chunk.data
        return seen

    def assert_gone(self, pids: Iterable[int], what: str) -> None:
        """Every pid is gone now: checked at once, no waiting (zombies count as gone)."""
        living = [pid for pid in pids if alive(pid)]
        self.assertEqual(living, [], f"{what}: still running: {living}")
