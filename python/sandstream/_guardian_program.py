"""The guardian: ends the commands of an owner process that died without ending them (spec 1.4, 9.11).

``_guardian.py`` runs this file as ``python -I -S _guardian_program.py``, once
per owner process, in a session of its own. Isolated mode puts neither this
directory nor the user's site on ``sys.path``: the program imports nothing of
the package and only the standard library. Its standard input is one end of a
socket pair whose only writer is the owner; one request a line:

- ``+PGID START GRACE_MS``: a command's process group, the start time of its
  leader (field 22 of ``/proc/PGID/stat``) and its grace period;
- ``+PGID START GRACE_MS session``: the same for a command on a terminal
  (spec 1.5), which leads a session: every group of the session is ended,
  SIGHUP first, as a closed terminal sends it;
- ``-PGID``: that group is gone, forget it.

While the owner lives, the guardian only blocks in ``read``: no timer, no
polling. The kernel closes the owner's end when the owner ends, however it
ends (SIGKILL, the OOM killer, a normal exit), and at end-of-file every group
still registered and still the command's gets the sequence of section 9.8:
SIGTERM and SIGCONT, SIGKILL at the end of its grace period if anything of it
lives. Then the guardian exits.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

#: What the guardian knows of each group: {pgid: (leader start time, grace period in ms, leads a session)}.
Registry = dict[int, tuple[int, int, bool]]

# Between two looks at the groups being ended (after end-of-file only): the
# delay a SIGKILL may come after the grace period, and the cost of a look.
_TICK_S = 0.025


def apply(line: bytes, registered: Registry) -> None:
    """Applies one request line to ``registered``; anything malformed is ignored."""
    words = line.split()
    if not words:
        return
    sign, number = words[0][:1], words[0][1:]
    if sign not in (b"+", b"-") or not number.isdigit():
        return
    pgid = int(number)
    # 0 and 1 are no command's group: killpg would reach this guardian's own group, or init's.
    if pgid <= 1:
        return
    registered.pop(pgid, None)
    if sign != b"+" or len(words) not in (3, 4) or not words[1].isdigit() or not words[2].isdigit():
        return
    if len(words) == 4 and words[3] != b"session":
        return
    registered[pgid] = (int(words[1]), int(words[2]), len(words) == 4)


def read_requests(fd: int) -> Registry:
    """Reads requests until end-of-file: the groups still registered when the owner went away."""
    registered: Registry = {}
    buffered = b""
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break  # the descriptor is unusable: the owner can tell us nothing more
        if not data:
            break
        *lines, buffered = (buffered + data).split(b"\n")
        for line in lines:
            apply(line, registered)
    # A last line without its newline was cut short by the owner's death: a
    # request cut short ("-12" of "-123") must not be read as another one.
    return registered


def stat_fields(pid: int | str, proc: str = "/proc") -> list[bytes] | None:
    """The fields of ``/proc/PID/stat`` from the third (the state) on; None once the process is gone.

    The command name before them is parenthesised and may itself hold
    spaces and parentheses: the fields start after the last ``)``.
    """
    try:
        with open(f"{proc}/{pid}/stat", "rb") as file:
            stat = file.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 :].split()


def is_ours(pgid: int, start: int, proc: str = "/proc") -> bool:
    """Whether group ``pgid``, registered with its leader's start time ``start``, may be signalled.

    While a member of a group lives, the kernel gives its number to no new
    process: with the leader gone, a signal reaches what is left of the
    command or nothing. A process that holds the number with another start
    time got it again once the group was gone: not ours.
    """
    fields = stat_fields(pgid, proc)
    if fields is None:
        return True
    return len(fields) > 19 and fields[19] == str(start).encode()


def live_groups(proc: str = "/proc") -> set[int]:
    """The groups that have a member neither zombie nor dead: one look at every process.

    An orphan whose new parent does not reap it (a container's init often
    does not) stays a zombie for good; it runs no code and holds no group.
    """
    groups = set()
    for entry in os.listdir(proc):
        if entry.isdigit():
            fields = stat_fields(entry, proc)
            if fields is not None and len(fields) > 2 and fields[0] not in (b"Z", b"X"):
                groups.add(int(fields[2]))
    return groups


def session_groups(sid: int, proc: str = "/proc") -> set[int]:
    """The groups of session ``sid`` that have a member neither zombie nor dead: one look at every process."""
    groups = set()
    for entry in os.listdir(proc):
        if entry.isdigit():
            fields = stat_fields(entry, proc)
            if fields is not None and len(fields) > 3 and fields[0] not in (b"Z", b"X") and fields[3] == str(sid).encode():
                groups.add(int(fields[2]))
    return groups


def end_groups(
    registered: Registry,
    *,
    kill: Callable[[int, int], None] = os.killpg,
    proc: str = "/proc",
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """The termination sequence on every registered group that is still its command's.

    The groups are ended together, so the last is gone within the longest
    grace period plus a tick. SIGKILL is not waited for: the kernel ends a
    killed process without its help.
    """
    ending: dict[int, tuple[int, float, bool]] = {}

    def targets(pgid: int, session: bool) -> list[int]:
        # A session's groups (the jobs of an interactive shell lead groups of their own), its leader's first.
        return [pgid, *sorted(session_groups(pgid, proc) - {pgid})] if session else [pgid]

    def send(groups: list[int], signum: int) -> bool:
        """Signals each group; False when none of them exists."""
        reached = False
        for group in groups:
            try:
                kill(group, signum)
                reached = True
            except ProcessLookupError:
                pass
            except OSError:
                reached = True  # a member we may not signal (set-uid): the others may still be reached by SIGKILL
        return reached

    for pgid, (start, grace_ms, session) in registered.items():
        if not is_ours(pgid, start, proc):
            continue
        groups = targets(pgid, session)
        # A terminal's session hears SIGHUP first, as from a closed terminal; SIGTERM follows at once.
        hung_up = send(groups, signal.SIGHUP) if session else False
        if not send(groups, signal.SIGTERM) and not hung_up:
            continue  # nothing of it is left
        send(groups, signal.SIGCONT)  # a stopped process acts on SIGTERM only once continued
        # Counted from the signal: SIGKILL never comes sooner than the grace period after SIGTERM.
        ending[pgid] = (start, clock() + grace_ms / 1000, session)
    while ending:
        sleep(_TICK_S)
        now = clock()
        for pgid in list(ending):
            start, deadline, session = ending[pgid]
            groups = targets(pgid, session)
            if not session:
                try:
                    kill(pgid, 0)  # zombies count here: a look at /proc below tells them apart
                except ProcessLookupError:
                    del ending[pgid]
                    continue
                except OSError:
                    pass
            if now >= deadline:
                del ending[pgid]
                if is_ours(pgid, start, proc):
                    send(groups, signal.SIGKILL)
        if ending:
            living = live_groups(proc)
            ending = {pgid: entry for pgid, entry in ending.items()
                      if (session_groups(pgid, proc) if entry[2] else pgid in living)}


def _close_inherited() -> None:
    """Closes every descriptor but the three standard ones: nothing of the owner's stays open here."""
    for entry in os.listdir("/proc/self/fd"):
        if int(entry) > 2:
            try:
                os.close(int(entry))
            except OSError:
                pass  # the listing's own descriptor, closed already


def main() -> None:
    """Reads until the owner is gone, ends what it left, exits."""
    os.chdir("/")  # pins no directory of the owner's (an unmountable file system) for as long as it lives
    _close_inherited()
    end_groups(read_requests(0))


if __name__ == "__main__":
    main()
