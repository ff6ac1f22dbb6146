"""The owner's side of the guardian: a foreground command never outlives this process (spec 1.4, SS-OWNER-1).

Each command leads a process group of its own. A guardian (the program in
``_guardian_program.py``), started at this process's first command, holds the
list of those groups, read from a socket whose only writer is this process.
The kernel closes this process's end when it ends, however it ends, and at
end-of-file the guardian runs the termination sequence on every group still
listed. While this process lives the guardian only blocks in ``read``.

Who holds the writing end decides when the guardian sees end-of-file, so no
other process may hold it: it is close-on-exec (no command, and no program
another library starts, inherits it), never one of the descriptors 0-2, and a
child of ``os.fork`` (``multiprocessing``'s fork, too) closes its copy at once
(``os.register_at_fork``); such a child starts a guardian of its own if it
runs commands. A fork that bypasses Python's fork hooks (a C library's
``fork()`` without exec) would keep the guardian waiting until that child
ends too: the guarantee is then late, never broken.

A guardian that died (someone killed it) is noticed at the next write, which
finds no reader, and replaced; the new one is told every group still running.
"""

from __future__ import annotations

import asyncio
import fcntl
import math
import os
import select
import signal
import socket
import sys
import threading
from collections.abc import Callable

__all__ = ["Guardian", "GuardedGroup", "process_guardian", "start_ticks"]

_PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_guardian_program.py")
#: Interval of the look at a group still alive when its command was settled as lost.
_LINGER_POLL_S = 1.0


def start_ticks(pid: int, proc: str = "/proc") -> int | None:
    """The start time of process ``pid`` in clock ticks since boot (field 22 of its stat); None if unreadable."""
    try:
        with open(f"{proc}/{pid}/stat", "rb") as file:
            stat = file.read()
        return int(stat[stat.rfind(b")") + 2 :].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _above_stdio(fd: int) -> int:
    """``fd``, moved past 2 if need be: with this process's stdio closed, a socket could get 0-2."""
    if fd > 2:
        return fd
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.close(fd)
    return moved


def _request(pgid: int, start: int, grace: int, session: bool) -> bytes:
    """The guardian's request for one group (``+PGID START GRACE_MS``), or session (`` session`` after it)."""
    return b"+%d %d %d%s\n" % (pgid, start, grace, b" session" if session else b"")


class Guardian:
    """This process's guardian: the groups registered, and the process that ends them should this one die.

    Thread-safe; one per process (``process_guardian()``).
    """

    def __init__(self, executable: str = sys.executable, program: str = _PROGRAM) -> None:
        self._executable = executable
        self._program = program
        self._lock = threading.Lock()
        self._groups: dict[int, tuple[int, int, bool]] = {}
        self._reset()

    def _reset(self) -> None:
        self._fd: int | None = None  # our end of the socket
        self._pid: int | None = None
        self._pidfd: int | None = None
        self._pending = bytearray()  # written once the guardian reads again
        self._unreaped: list[tuple[int, int | None]] = []  # guardians replaced, to be reaped

    @property
    def pid(self) -> int | None:
        """The guardian's pid while one was started and not found dead."""
        return self._pid

    def registered(self) -> list[int]:
        """The groups registered now."""
        with self._lock:
            return list(self._groups)

    def register(self, pgid: int, grace_ms: float, session: bool = False) -> bool:
        """Registers the group that ``pgid`` leads, with ``grace_ms`` between SIGTERM and SIGKILL.

        With ``session``, ``pgid`` leads a session (a command on a terminal),
        and every group of that session is ended, SIGHUP first.

        To be called right after the start, while the leader is this
        process's child and not yet reaped, so its pid is still its own: its
        start time tells it from a later process given the same number.
        False when its stat cannot be read.
        """
        start = start_ticks(pgid)
        if start is None:
            return False
        grace = min(math.ceil(grace_ms), 2**31 - 1)
        with self._lock:
            self._groups[pgid] = (start, grace, session)
            self._send(_request(pgid, start, grace, session))
        return True

    def unregister(self, pgid: int) -> None:
        """Forgets a group once nothing of it lives, so that a later group of that number is never signalled."""
        with self._lock:
            if self._groups.pop(pgid, None) is not None:
                self._send(b"-%d\n" % pgid)

    # ---- under the lock ---------------------------------------------------

    def _send(self, line: bytes) -> None:
        self._reap()
        if self._fd is not None:
            self._pending += line
            if self._flush():
                return
            self._retire()  # nobody reads: the guardian died
        if self._groups and self._start():
            # A new guardian is told every group still registered, this one's included.
            self._pending += b"".join(_request(pgid, *entry) for pgid, entry in self._groups.items())
            if not self._flush():
                self._retire()

    def _flush(self) -> bool:
        """Writes what is pending; False once no guardian reads the socket."""
        assert self._fd is not None
        sock = socket.socket(fileno=self._fd)  # a view, for MSG_NOSIGNAL: a dead reader is EPIPE, not SIGPIPE
        try:
            while self._pending:
                try:
                    sent = sock.send(self._pending, socket.MSG_NOSIGNAL)
                except BlockingIOError:
                    return True  # a guardian stopped or behind: the rest goes with the next request
                except OSError:
                    return False
                del self._pending[:sent]
        finally:
            sock.detach()
        return True

    def _start(self) -> bool:
        """Starts a guardian in a session of its own; False where none can run (then commands run unguarded)."""
        if not self._executable or not os.path.isfile(self._program) or not os.path.isdir("/proc/self"):
            return False
        try:
            ours, theirs = socket.socketpair()  # both close-on-exec
        except OSError:
            return False
        our_fd = their_fd = -1
        try:
            our_fd = _above_stdio(ours.detach())
            their_fd = _above_stdio(theirs.detach())
            # posix_spawn, not Popen: no Popen object to warn at exit about a child still running,
            # and no fork of this (perhaps large) process. Its own session: a signal to this
            # process's group (Ctrl-C) or to a command's group never reaches it.
            pid = os.posix_spawn(
                self._executable,
                [self._executable, "-I", "-S", self._program],
                {"LC_ALL": "C"},
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, their_fd, 0),
                    (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                    (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
                ],
                setsid=True,
            )
        except (OSError, NotImplementedError, ValueError):
            if our_fd >= 0:
                os.close(our_fd)
            return False
        finally:
            if their_fd >= 0:
                os.close(their_fd)
        os.set_blocking(our_fd, False)  # never blocks the event loop, even on a stopped guardian
        self._fd, self._pid = our_fd, pid
        try:
            self._pidfd = os.pidfd_open(pid)  # tells this guardian from a later process of its number
        except (OSError, AttributeError):
            self._pidfd = None
        return True

    def _retire(self) -> None:
        """Drops a guardian that reads no more: ended for sure, and reaped when it can be."""
        if self._fd is not None:
            os.close(self._fd)
        if self._pid is not None:
            if self._pidfd is not None:
                try:
                    signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)  # it closed its end: it is useless
                except OSError:
                    pass
            self._unreaped.append((self._pid, self._pidfd))
        self._fd = self._pid = self._pidfd = None
        self._pending.clear()
        self._reap()

    def _reap(self) -> None:
        """Reaps replaced guardians that have exited, each through its pidfd where there is one."""
        still = []
        for pid, pidfd in self._unreaped:
            try:
                if pidfd is not None:
                    readable, _, _ = select.select([pidfd], [], [], 0)
                    if not readable:
                        still.append((pid, pidfd))
                        continue
                    os.waitid(os.P_PIDFD, pidfd, os.WEXITED | os.WNOHANG)
                elif os.waitpid(pid, os.WNOHANG)[0] == 0:
                    still.append((pid, pidfd))
                    continue
            except ChildProcessError:
                pass  # reaped by someone else (a SIGCHLD handler that waits for any child)
            if pidfd is not None:
                os.close(pidfd)
        self._unreaped = still

    def _forget_in_child(self) -> None:
        """In a child of ``os.fork``: the parent's guardian and groups are not this process's."""
        for fd in [self._fd, self._pidfd, *(pidfd for _, pidfd in self._unreaped)]:
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._lock = threading.Lock()  # another thread may have held it at the fork
        self._groups = {}
        self._reset()


_guardian: Guardian | None = None
_guardian_lock = threading.Lock()


def process_guardian() -> Guardian:
    """The guardian of this process, made at the first call."""
    global _guardian
    with _guardian_lock:
        if _guardian is None:
            _guardian = Guardian()
        return _guardian


def _after_fork_in_child() -> None:
    global _guardian_lock
    _guardian_lock = threading.Lock()
    if _guardian is not None:
        _guardian._forget_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)


class GuardedGroup:
    """One command's process group, registered with this process's guardian."""

    def __init__(self, pgid: int, guardian: Guardian) -> None:
        self._pgid = pgid
        self._guardian: Guardian | None = guardian

    @classmethod
    def register(cls, pgid: int, grace_ms: float, session: bool = False) -> GuardedGroup | None:
        """Registers group ``pgid`` (its leader just started, not yet reaped), or its session; None if it cannot be."""
        guardian = process_guardian()
        return cls(pgid, guardian) if guardian.register(pgid, grace_ms, session) else None

    def forget(self) -> None:
        """The group is gone: the guardian forgets it (once)."""
        if self._guardian is not None:
            self._guardian.unregister(self._pgid)
            self._guardian = None

    def forget_once_gone(self, alive: Callable[[], bool]) -> None:
        """Forgets the group now if ``alive()`` says it is gone, else once a look every second says so.

        A command settled as lost (its end unseen within the kill wait) may
        still run: it stays registered, so that this process's death still
        ends it. Without a running loop it stays registered for good.
        """
        if self._guardian is None or not alive():
            self.forget()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return

        def look() -> None:
            if alive():
                loop.call_later(_LINGER_POLL_S, look)
            else:
                self.forget()

        loop.call_later(_LINGER_POLL_S, look)
