"""A command's process group: signalling it and telling whether anything of it lives.

Each command leads its own process group (``process_group=0``), so one
``killpg`` reaches everything it started, grandchildren included, unless a
process left the group on purpose (``setsid``): that is the containment this
adapter documents (spec 9.7).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator

_CANNOT_OPEN = (errno.EMFILE, errno.ENFILE, errno.ENOMEM)


def signal_group(pgid: int, signum: int) -> None:
    """Sends ``signum`` to the whole group; a group already gone is no error."""
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        pass


def group_alive(pgid: int, proc: str = "/proc") -> bool:
    """True while a member of the group is alive.

    ``killpg(pgid, 0)`` also counts zombies, and an orphan whose new parent
    does not reap it (a container's init often does not) stays a zombie for
    good, runs no code, and must not hold the result back: where procfs
    exists, a group of zombies counts as gone.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # a member exists that we may not signal (a set-uid program)
    live = group_has_live_member(pgid, proc)
    return True if live is None else live


def group_has_live_member(pgid: int, proc: str = "/proc") -> bool | None:
    """Whether procfs lists a non-zombie member of the group; None when procfs cannot be read.

    Out of descriptors or memory, a member could not be looked at, and the
    answer is True: a group is never reported empty on a guess.
    """
    try:
        for stat in _stat_lines(proc):
            state, pgrp = parse_stat(stat)
            if pgrp == pgid and state not in (b"Z", b"X", b""):
                return True
    except _Unreadable:
        return True
    except OSError as error:
        return True if error.errno in _CANNOT_OPEN else None
    return False


class _Unreadable(Exception):
    """A process's stat could not be read for want of descriptors or memory: procfs cannot be trusted now."""


def _stat_lines(proc: str) -> Iterator[bytes]:
    """The ``stat`` line of every process procfs lists.

    Raises what listing ``proc`` raises, and :class:`_Unreadable` when a line
    cannot be read for want of descriptors or memory; a process that ended
    while it was looked at is passed over.
    """
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(f"{proc}/{entry}/stat", "rb") as file:
                stat = file.read()
        except OSError as error:
            if error.errno in _CANNOT_OPEN:
                raise _Unreadable() from error
            continue  # it ended while we looked
        yield stat


def parse_stat(stat: bytes) -> tuple[bytes, int]:
    """The state letter and process group of a ``/proc/<pid>/stat`` line.

    The command name is parenthesised and may itself hold spaces and
    parentheses, so fields are counted from the last ``)``.
    """
    fields = stat[stat.rfind(b")") + 2 :].split(b" ", 3)
    try:
        return fields[0], int(fields[2])
    except (IndexError, ValueError):
        return b"", -1


# ---- sessions: the tree of a command on a terminal ------------------------------------


def _session_entries(proc: str = "/proc") -> list[tuple[bytes, int, int]] | None:
    """(state, process group, session) of every process procfs lists; None when procfs cannot be read."""
    found = []
    try:
        for stat in _stat_lines(proc):
            fields = stat[stat.rfind(b")") + 2 :].split(b" ", 5)
            try:
                found.append((fields[0], int(fields[2]), int(fields[3])))
            except (IndexError, ValueError):
                continue
    except (_Unreadable, OSError):
        return None
    return found


def session_groups(sid: int, proc: str = "/proc") -> set[int] | None:
    """The process groups of session ``sid`` that hold a process neither zombie nor dead.

    A group never spans two sessions, so signalling each of them signals the
    whole session, the jobs of an interactive shell included, each of which
    leads a group of its own. None when procfs cannot be read.
    """
    entries = _session_entries(proc)
    if entries is None:
        return None
    return {pgrp for state, pgrp, session in entries if session == sid and pgrp > 1 and state not in (b"Z", b"X")}


def session_alive(sid: int, proc: str = "/proc") -> bool:
    """True while session ``sid`` has a member neither zombie nor dead (True when procfs cannot tell)."""
    groups = session_groups(sid, proc)
    return True if groups is None else bool(groups)


def signal_session(sid: int, signum: int) -> None:
    """Sends ``signum`` to every process group of session ``sid``; a session already gone is no error.

    Looked at twice, so that a group made while the first signals were on
    their way is reached too. Where procfs cannot be read, the leader's own
    group is signalled. Raises the first failure other than a group gone.
    """
    failure: OSError | None = None
    signalled: set[int] = set()
    for _ in range(2):
        groups = session_groups(sid)
        for pgid in (groups if groups is not None else {sid}) - signalled:
            signalled.add(pgid)
            try:
                os.killpg(pgid, signum)
            except ProcessLookupError:
                pass
            except OSError as error:
                failure = failure or error
    if failure is not None:
        raise failure


class CommandTree:
    """A command's tree: its leader's process group, or under a terminal every group of its session."""

    __slots__ = ("_pid", "_session")

    def __init__(self, pid: int, session: bool) -> None:
        self._pid = pid
        self._session = session

    def alive(self) -> bool:
        return session_alive(self._pid) if self._session else group_alive(self._pid)

    def signal(self, signum: int) -> None:
        """Signals every member; a tree already gone is no error."""
        if self._session:
            signal_session(self._pid, signum)
        else:
            signal_group(self._pid, signum)
