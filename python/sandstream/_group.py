"""A command's process group: signalling it and telling whether anything of it lives.

Each command leads its own process group (``process_group=0``), so one
``killpg`` reaches everything it started, grandchildren included, unless a
process left the group on purpose (``setsid``): that is the containment this
adapter documents (spec 9.7).
"""

from __future__ import annotations

import errno
import os

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
        entries = os.listdir(proc)
    except OSError as error:
        return True if error.errno in _CANNOT_OPEN else None
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"{proc}/{entry}/stat", "rb") as file:
                stat = file.read()
        except OSError as error:
            if error.errno in _CANNOT_OPEN:
                return True
            continue  # it ended while we looked
        state, pgrp = parse_stat(stat)
        if pgrp == pgid and state not in (b"Z", b"X", b""):
            return True
    return False


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
