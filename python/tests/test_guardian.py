"""The guardian's decisions, without processes: which groups it ends, and never one that is no longer the command's.

A fake /proc (a directory of ``PID/stat`` files), a fake ``killpg`` that
records what it was asked, and a fake clock: pid reuse is staged, not waited for.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from sandstream import _guardian_program as program
from sandstream._guardian import start_ticks


def stat_line(pid: int, pgrp: int, start: int, state: str = "S", session: int = 0) -> str:
    # Fields 3 to 52 of proc(5); the command name holds a space and a parenthesis, as names may.
    fields = [state, "1", str(pgrp), str(session)] + ["0"] * 15 + [str(start)] + ["0"] * 30
    return f"{pid} (a) b) {' '.join(fields)}\n"


class FakeHost:
    """A /proc of its own, groups that exist or not, and a clock that moves only when the guardian sleeps."""

    def __init__(self, proc: Path) -> None:
        self.proc = proc
        self.now = 100.0
        self.sent: list[tuple[int, int]] = []
        self.groups: set[int] = set()
        self.on_sleep = lambda: None

    def process(self, pid: int, pgrp: int, start: int, state: str = "S", session: int = 0) -> None:
        (self.proc / str(pid)).mkdir(exist_ok=True)
        (self.proc / str(pid) / "stat").write_text(stat_line(pid, pgrp, start, state, session))
        self.groups.add(pgrp)

    def gone(self, pid: int) -> None:
        (self.proc / str(pid) / "stat").unlink()
        (self.proc / str(pid)).rmdir()

    def kill(self, pgid: int, signum: int) -> None:
        if pgid not in self.groups:
            raise ProcessLookupError(errno.ESRCH, "no such group")
        if signum != 0:
            self.sent.append((pgid, signum))

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.on_sleep()

    def end(self, registered: program.Registry) -> list[tuple[int, int]]:
        program.end_groups(registered, kill=self.kill, proc=str(self.proc), clock=lambda: self.now, sleep=self.sleep)
        return self.sent


class GuardianDecisionTest(unittest.TestCase):
    def setUp(self) -> None:
        temporary = tempfile.TemporaryDirectory()
        self.addCleanup(temporary.cleanup)
        self.host = FakeHost(Path(temporary.name))

    def registry(self, *lines: bytes) -> program.Registry:
        registered: program.Registry = {}
        for line in lines:
            program.apply(line, registered)
        return registered

    def test_requests_register_and_unregister(self) -> None:
        registered = self.registry(b"+500 42 300", b"+600 43 2000", b"-500")
        self.assertEqual(registered, {600: (43, 2000, False)})

    def test_a_session_is_registered_as_one(self) -> None:
        self.assertEqual(self.registry(b"+500 42 300 session", b"+600 43 300 sessions"), {500: (42, 300, True)})

    def test_every_group_of_a_session_gets_sighup_first_then_the_sequence(self) -> None:
        self.host.process(500, 500, 42, session=500)  # the command, on its terminal
        self.host.process(510, 510, 60, session=500)  # a job of it, leading a group of its own
        self.host.process(600, 600, 70, session=600)  # another session: never signalled
        sent = self.host.end(self.registry(b"+500 42 300 session"))
        first = [(500, signal.SIGHUP), (510, signal.SIGHUP), (500, signal.SIGTERM), (510, signal.SIGTERM),
                 (500, signal.SIGCONT), (510, signal.SIGCONT)]
        self.assertEqual(sent[:6], first)
        self.assertEqual(sorted(sent[6:]), [(500, signal.SIGKILL), (510, signal.SIGKILL)])

    def test_malformed_requests_and_groups_0_and_1_are_ignored(self) -> None:
        lines = (b"+0 1 1", b"+1 1 1", b"+-5 1 1", b"+7 x 1", b"+8 1", b"*9 1 1", b"", b"+10 1 1 1")
        self.assertEqual(self.registry(*lines), {})

    def test_a_request_cut_short_by_the_owners_death_is_not_read(self) -> None:
        read, write = os.pipe()
        os.write(write, b"+700 5 300\n+711 6 300\n-71")  # "-711", cut short
        os.close(write)
        try:
            self.assertEqual(program.read_requests(read), {700: (5, 300, False), 711: (6, 300, False)})
        finally:
            os.close(read)

    def test_an_unregistered_group_is_never_signalled(self) -> None:
        self.host.process(500, 500, 42)
        self.assertEqual(self.host.end(self.registry(b"+500 42 300", b"-500")), [])

    def test_a_number_taken_again_by_another_leader_is_not_signalled(self) -> None:
        # The command's group ended unseen; a new process got the number 500 and leads a group of it.
        self.host.process(500, 500, 99)
        self.assertEqual(self.host.end(self.registry(b"+500 42 300")), [])

    def test_a_group_whose_leader_is_gone_is_still_the_commands(self) -> None:
        # While a member of group 500 lives, no new process gets the number 500.
        self.host.process(501, 500, 50)
        sent = self.host.end(self.registry(b"+500 42 300"))
        self.assertEqual(sent[:2], [(500, signal.SIGTERM), (500, signal.SIGCONT)])

    def test_sigterm_then_sigkill_after_the_grace_period(self) -> None:
        self.host.process(500, 500, 42)
        began = self.host.now
        sent = self.host.end(self.registry(b"+500 42 300"))
        self.assertEqual(sent, [(500, signal.SIGTERM), (500, signal.SIGCONT), (500, signal.SIGKILL)])
        # The SIGKILL was sent at the first look at or after the grace period: not sooner, not a tick late.
        self.assertGreaterEqual(self.host.now - began, 0.3)
        self.assertLess(self.host.now - began, 0.3 + 2 * program._TICK_S)

    def test_a_group_gone_in_its_grace_period_gets_no_sigkill(self) -> None:
        self.host.process(500, 500, 42)

        def ends() -> None:
            self.host.gone(500)
            self.host.groups.discard(500)
        self.host.on_sleep = ends
        self.assertEqual(self.host.end(self.registry(b"+500 42 300")), [(500, signal.SIGTERM), (500, signal.SIGCONT)])

    def test_a_group_of_zombies_is_gone(self) -> None:
        self.host.process(500, 500, 42, state="Z")
        self.assertNotIn(500, program.live_groups(str(self.host.proc)))
        self.assertEqual(self.host.end(self.registry(b"+500 42 300")), [(500, signal.SIGTERM), (500, signal.SIGCONT)])

    def test_a_number_taken_again_during_the_grace_period_gets_no_sigkill(self) -> None:
        self.host.process(500, 500, 42)

        def reused() -> None:
            # The command's group ended and a new leader of 500 started, all within one tick.
            self.host.process(500, 500, 77)
        self.host.on_sleep = reused
        self.assertEqual(self.host.end(self.registry(b"+500 42 300")), [(500, signal.SIGTERM), (500, signal.SIGCONT)])

    def test_the_owner_reads_the_start_time_the_guardian_compares(self) -> None:
        self.host.process(500, 500, 4242)
        self.assertEqual(start_ticks(500, str(self.host.proc)), 4242)
        self.assertTrue(program.is_ours(500, 4242, str(self.host.proc)))
        self.assertEqual(start_ticks(os.getpid()), int(program.stat_fields(os.getpid())[19]))


# In a fresh interpreter (one thread): a command registered, then os.fork; the child reports
# whether it holds the owner's end of the guardian's socket, the parent whether it still does.
FORK_CHECK = """
import os, subprocess
from sandstream._guardian import process_guardian

def links():
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.add(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass
    return found

guardian = process_guardian()
command = subprocess.Popen(["sleep", "30"], process_group=0)
try:
    assert guardian.register(command.pid, 300)
    ours = os.readlink(f"/proc/self/fd/{guardian._fd}")
    child = os.fork()
    if child == 0:
        os._exit(10 if ours in links() else 0)
    held_by_child = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
    print(held_by_child, ours in links())
finally:
    guardian.unregister(command.pid)
    command.kill()
    command.wait()
"""


class GuardianForkTest(unittest.TestCase):
    def test_a_forked_child_does_not_hold_the_owners_end(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
        done = subprocess.run([sys.executable, "-W", "error", "-c", FORK_CHECK], env=env, capture_output=True,
                              timeout=30)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.split(), [b"0", b"True"])


if __name__ == "__main__":
    unittest.main()
