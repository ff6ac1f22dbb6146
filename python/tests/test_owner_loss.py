"""Owner loss (spec 1.4, section 9.11): a foreground command never outlives the process that started it.

Each test drives a real owner process (``owner_process.py``), ends it with
SIGKILL or a normal exit, and watches the command's tree through /proc: every
process of the tree carries the test's marker in its argv (the sleeps run
through a symbolic link named after it). Nothing is decided by a fixed sleep:
the tests wait for events, with deadlines derived from the stated bound.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import uuid
from pathlib import Path

from .support import GRACE_MS, alive, kill_if_alive

PYTHON_DIR = Path(__file__).resolve().parents[1]
OWNER = Path(__file__).resolve().parent / "owner_process.py"
GUARDIAN_PROGRAM = b"_guardian_program.py"


def cmdline(pid: int | str) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            return file.read()
    except OSError:
        return b""


def marked(marker: bytes) -> list[int]:
    """The live processes (not zombies) whose argv holds ``marker``."""
    return [int(entry) for entry in os.listdir("/proc")
            if entry.isdigit() and marker in cmdline(entry) and alive(int(entry))]


def wait_for(condition, seconds: float, step: float = 0.005) -> float | None:
    """Polls ``condition()`` until it holds; the monotonic time it was seen to, or None at the deadline."""
    deadline = time.monotonic() + seconds
    while True:
        if condition():
            return time.monotonic()
        if time.monotonic() > deadline:
            return None
        time.sleep(step)


def start_time(pid: int) -> bytes | None:
    """Field 22 of the process's stat: with its pid, it names one process, never a later one of that number."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            stat = file.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 :].split()[19]


class OwnerLossTest(unittest.TestCase):
    def setUp(self) -> None:
        self.marker = f"sandstream-owner-test-{uuid.uuid4().hex}"
        self.dir = Path(tempfile.mkdtemp(prefix="sandstream-owner-"))
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.addCleanup(self.kill_leftovers)
        self.term = self.dir / "term"
        self.guardians: dict[int, bytes | None] = {}
        # A sleep whose argv carries the marker, so that every process of a tree can be found.
        self.sleep = self.dir / f"{self.marker}-sleep"
        self.sleep.symlink_to(shutil.which("sleep") or "/bin/sleep")
        env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
        self.owner = subprocess.Popen([sys.executable, str(OWNER), str(GRACE_MS)], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, env=env)
        self.addCleanup(self.owner.stdout.close)
        self.addCleanup(self.owner.stdin.close)
        stated = self.answer()
        self.owner_loss_s = stated["ownerLossMs"] / 1000
        self.assertEqual(stated["ownerLossMs"], GRACE_MS + 1000)

    def kill_leftovers(self) -> None:
        """By pid only: the owner, the guardians it reported, the processes carrying this test's marker."""
        kill_if_alive(self.owner.pid)
        self.owner.wait()
        for pid, started in self.guardians.items():
            if start_time(pid) == started:
                kill_if_alive(pid)
        for pid in marked(self.marker.encode()):
            kill_if_alive(pid)

    def answer(self) -> dict:
        line = self.owner.stdout.readline()
        self.assertTrue(line, "the owner process ended without answering")
        return json.loads(line)

    def request(self, *request: object) -> dict:
        self.owner.stdin.write(json.dumps(list(request)).encode() + b"\n")
        self.owner.stdin.flush()
        reply = self.answer()
        pid = reply.get("guardian")
        if pid is not None and pid not in self.guardians:
            self.guardians[pid] = start_time(pid)
            # The guardian runs its program: its argv is read once its exec completed.
            self.assertIsNotNone(wait_for(lambda: GUARDIAN_PROGRAM in cmdline(pid), 5), cmdline(pid))
        return reply

    def tree(self, name: str, *, ignore_term: bool = False) -> list[str]:
        """A leader with a background and a foreground child; each child holds a sleep and records SIGTERM.

        With ``ignore_term`` the sleeps ignore SIGTERM (only SIGKILL ends the tree).
        """
        term, sleep = shlex.quote(str(self.term)), shlex.quote(str(self.sleep))
        up = shlex.quote(str(self.dir)) + "/$0.up"
        if ignore_term:
            body = (f'trap "echo $0 >> {term}" TERM; (trap "" TERM; exec {sleep} 1000) & '
                    f'echo > {up}; while :; do wait; done')
        else:
            body = f'trap "echo $0 >> {term}; exit 143" TERM; {sleep} 1000 & echo > {up}; wait'
        role = f"{self.marker}-{name}"
        script = f"sh -c {shlex.quote(body)} {role}-bg & sh -c {shlex.quote(body)} {role}-fg; wait"
        return ["sh", "-c", script, f"{role}-leader"]

    def wait_until_up(self, *names: str) -> None:
        """Every tree is running: its children wrote their files, /proc shows its five processes."""
        files = [self.dir / f"{self.marker}-{name}-{role}.up" for name in names for role in ("bg", "fg")]
        seen = wait_for(lambda: all(path.exists() for path in files) and
                        len(marked(self.marker.encode())) >= 5 * len(names), 10)
        self.assertIsNotNone(seen, f"the trees never came up: {marked(self.marker.encode())}")

    def crash_owner(self) -> tuple[float, float]:
        """SIGKILL to the owner; returns when it was sent, and the time one look at /proc takes."""
        began = time.monotonic()
        marked(self.marker.encode())
        look = time.monotonic() - began
        killed = time.monotonic()
        os.kill(self.owner.pid, signal.SIGKILL)
        self.owner.wait()
        return killed, look

    def assert_gone_within_bound(self, since: float, look: float) -> float:
        """Every marked process is gone within the stated bound after ``since`` (plus the time of a look)."""
        gone = wait_for(lambda: not marked(self.marker.encode()), 3 * self.owner_loss_s + 5)
        self.assertIsNotNone(gone, f"the tree outlived its owner: {marked(self.marker.encode())}")
        self.assertLessEqual(gone - since, self.owner_loss_s + 2 * look + 0.05,
                             f"the tree was gone {gone - since:.3f} s after the owner's end, "
                             f"past the stated {self.owner_loss_s:.3f} s")
        return gone - since

    def terms_recorded(self) -> set[str]:
        return set(self.term.read_text().split()) if self.term.exists() else set()

    def assert_term_first(self, *names: str) -> None:
        """Each child's trap saw SIGTERM (it ran before the end: SIGKILL gives no trap a chance)."""
        expected = {f"{self.marker}-{name}-{role}" for name in names for role in ("bg", "fg")}
        self.assertTrue(expected <= self.terms_recorded(), f"no SIGTERM came first: {self.terms_recorded()}")

    # ---- the owner is killed ----------------------------------------------

    def test_a_streamed_tree_ends_with_its_killed_owner(self) -> None:
        reply = self.request("stream", self.tree("a"))
        self.assertTrue(alive(reply["guardian"]))
        self.wait_until_up("a")
        killed, look = self.crash_owner()
        self.assert_gone_within_bound(killed, look)
        self.assert_term_first("a")
        # With nothing left to end, the guardian is gone too.
        self.assertIsNotNone(wait_for(lambda: not alive(reply["guardian"]), self.owner_loss_s + 5))

    def test_a_tree_under_run_ends_with_its_killed_owner(self) -> None:
        self.request("run", self.tree("r"))
        self.wait_until_up("r")
        killed, look = self.crash_owner()
        self.assert_gone_within_bound(killed, look)
        self.assert_term_first("r")

    def test_a_tree_that_ignores_sigterm_is_killed_after_the_grace_period(self) -> None:
        self.request("stream", self.tree("i", ignore_term=True))
        self.wait_until_up("i")
        killed, look = self.crash_owner()
        took = self.assert_gone_within_bound(killed, look)
        self.assert_term_first("i")
        # SIGTERM came after the owner's death, and SIGKILL no sooner than the grace period after it.
        self.assertGreaterEqual(took, GRACE_MS / 1000, "SIGKILL came before the grace period ended")

    def test_a_terminals_whole_session_ends_with_its_killed_owner(self) -> None:
        # On a terminal (spec 1.5): the leader and a job in a group of its own both ignore SIGHUP
        # and SIGTERM; the owner's death hangs the terminal up, and the guardian ends the session.
        sleep, up = shlex.quote(str(self.sleep)), shlex.quote(str(self.dir / "pty.up"))
        script = f"trap '' HUP TERM; set -m; {sleep} 1000 & echo $! > {up}; wait"
        reply = self.request("stream-pty", ["sh", "-c", script, f"{self.marker}-pty"])
        self.assertIsNotNone(wait_for(lambda: (self.dir / "pty.up").exists() and len(marked(self.marker.encode())) >= 2, 10))
        job = int((self.dir / "pty.up").read_text())
        self.assertNotEqual(os.getpgid(job), reply["pid"], "the job is not in a group of its own")
        self.assertEqual(os.getsid(job), reply["pid"])
        killed, look = self.crash_owner()
        took = self.assert_gone_within_bound(killed, look)
        self.assertGreaterEqual(took, GRACE_MS / 1000, "SIGKILL came before the grace period ended")

    # ---- the owner exits normally -----------------------------------------

    def test_a_normal_exit_after_close_leaves_no_guardian(self) -> None:
        reply = self.request("stream", self.tree("c"))
        self.wait_until_up("c")
        self.request("close")
        self.assertEqual(marked(self.marker.encode()), [])
        self.request_exit()
        self.assertIsNotNone(wait_for(lambda: not alive(reply["guardian"]), 5),
                             "the guardian outlived an owner that exited normally")

    def test_a_normal_exit_without_close_ends_the_commands(self) -> None:
        self.request("stream", self.tree("x", ignore_term=True))
        self.wait_until_up("x")
        exited = self.request_exit()
        self.assert_gone_within_bound(exited, 0.0)
        self.assert_term_first("x")

    def request_exit(self) -> float:
        """Asks the owner to return from main(); returns once it exited (its stdout closed and it was reaped).

        The guardian holds nothing of the owner's standard streams: end-of-file comes at the owner's exit.
        """
        self.owner.stdin.write(b'["exit"]\n')
        self.owner.stdin.flush()
        self.assertEqual(self.owner.stdout.read(), b"")
        self.assertEqual(self.owner.wait(timeout=10), 0)
        return time.monotonic()

    # ---- the guardian --------------------------------------------------------

    def test_the_guardian_holds_nothing_of_the_owner(self) -> None:
        reply = self.request("stream", self.tree("g"))
        pid = reply["guardian"]
        self.assertTrue(alive(pid))
        # Once it runs its program (a Python start later), it pins no directory of the owner's.
        self.assertIsNotNone(wait_for(lambda: os.readlink(f"/proc/{pid}/cwd") == "/", 10))
        fds = {int(fd): os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        self.assertEqual(sorted(fds), [0, 1, 2], fds)
        self.assertTrue(fds[0].startswith("socket:"), fds)
        self.assertEqual((fds[1], fds[2]), (os.devnull, os.devnull))
        self.assertEqual(os.getsid(pid), pid, "the guardian is not in a session of its own")
        # No command holds the owner's end: the tree's leader has no socket.
        leader = reply["pid"]
        links = [os.readlink(f"/proc/{leader}/fd/{fd}") for fd in os.listdir(f"/proc/{leader}/fd")]
        self.assertFalse([link for link in links if link.startswith("socket:")], links)

    def test_a_killed_guardian_is_replaced_at_the_next_command(self) -> None:
        first = self.request("stream", self.tree("k1"))["guardian"]
        self.wait_until_up("k1")
        os.kill(first, signal.SIGKILL)
        self.assertIsNotNone(wait_for(lambda: not alive(first), 5))
        second = self.request("stream", self.tree("k2"))["guardian"]
        self.assertNotEqual(second, first)
        self.assertTrue(alive(second))
        # The owner reaped the guardian it lost: no zombie of it is left behind.
        self.assertIsNotNone(wait_for(lambda: start_time(first) != self.guardians[first], 5))
        self.wait_until_up("k1", "k2")
        killed, look = self.crash_owner()
        # The new guardian was told of the first tree too: both end.
        self.assert_gone_within_bound(killed, look)
        self.assert_term_first("k1", "k2")


if __name__ == "__main__":
    unittest.main()
