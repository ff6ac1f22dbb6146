"""Watching a command's leader: reaped the moment it exits, through a pidfd on the event loop.

No child watcher thread and no SIGCHLD handler: the pidfd becomes readable
when the leader exits, and only then is it reaped, with ``waitpid`` on its own
pid (never ``-1``, which could reap another library's children). Where no pidfd
can be had (a kernel before 5.3, or no descriptor left) the leader is polled
with a growing interval instead.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Callable

from ._ending import Status, status_of

_POLL_FIRST_S = 0.001
_POLL_MAX_S = 0.05


class LeaderWatch:
    def __init__(
        self, loop: asyncio.AbstractEventLoop, popen: subprocess.Popen[bytes], on_exit: Callable[[Status], None]
    ) -> None:
        self._loop = loop
        self._popen = popen
        self._on_exit = on_exit
        self.status: Status | None = None
        self._pidfd: int | None = None
        try:
            self._pidfd = os.pidfd_open(popen.pid)
        except OSError:
            self._poll(_POLL_FIRST_S)
        else:
            loop.add_reader(self._pidfd, self._reap)

    def _poll(self, delay: float) -> None:
        def check() -> None:
            self._reap()
            if self.status is None:
                self._poll(min(delay * 2, _POLL_MAX_S))

        self._loop.call_later(delay, check)

    def _reap(self) -> None:
        if self.status is not None:
            return
        try:
            pid, wait_status = os.waitpid(self._popen.pid, os.WNOHANG)
        except ChildProcessError:
            pid, wait_status = self._popen.pid, None  # reaped by someone else: no status was reported
        if pid == 0:
            return
        if self._pidfd is not None:
            self._loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        # Popen must neither wait for nor warn about a child reaped here.
        self._popen.returncode = -1 if wait_status is None else os.waitstatus_to_exitcode(wait_status)
        self.status = (None, None) if wait_status is None else status_of(wait_status)
        self._on_exit(self.status)
