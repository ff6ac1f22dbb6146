"""The one termination sequence (spec 9.8), ported from the TypeScript runtime.

SIGTERM to the process group (under a terminal: SIGHUP, then SIGTERM, to
every group of its session), then SIGCONT (a stopped process cannot act on
SIGTERM until continued), SIGKILL after the grace period, then a bounded
wait (the kill wait) for the end, after which the command is settled with
``TransportError``: its state is unknown, and saying so beats hanging. It
runs on the core's own timers, never on anything of the caller's, so it
completes after the caller's signal fired or its task was cancelled.
"""

from __future__ import annotations

import asyncio
import signal
from typing import TYPE_CHECKING

from .errors import TransportError

if TYPE_CHECKING:
    from ._core import ProcessCore


async def run_termination(core: ProcessCore) -> None:
    """Terminates the command's tree; returns once it settled (or was declared lost)."""
    loop = asyncio.get_running_loop()
    if core.terminal is not None and not core.settled:
        # What a closed terminal sends: an interactive shell ignores SIGTERM and exits on
        # SIGHUP, hanging its jobs up. SIGTERM follows at once (ADR-0052, T5).
        try:
            core.signal(signal.SIGHUP)
        except OSError:
            pass  # SIGTERM and SIGKILL still follow
    steps = ((signal.SIGTERM, core.settings.grace_s), (signal.SIGKILL, core.settings.kill_wait_s))
    for signum, wait in steps:
        if core.settled:
            return
        try:
            core.signal(signum)
        except OSError as error:
            if signum == signal.SIGKILL:
                core.fail_transport(TransportError(f"SIGKILL could not be sent to the command: {error}", cause=error))
                return
            continue  # SIGTERM could not be sent: waiting for its effect is pointless
        # Counted from the signal: SIGKILL never comes sooner than the grace period after SIGTERM.
        deadline = loop.time() + wait
        if signum == signal.SIGTERM:
            try:
                core.signal(signal.SIGCONT)
            except OSError:
                pass  # losing SIGCONT loses only a stopped command's chance to clean up
        if await core.settles_within(deadline - loop.time()):
            return
    # The end is reported once all output was delivered. While reading is
    # paused because the reader is behind, a missing end is the reader's
    # pace, not a lost command: each time reading resumes, the command gets
    # another kill wait to finish.
    while core.paused and not core.settled:
        await asyncio.wait([core.when_settled(), core.when_resumed()], return_when=asyncio.FIRST_COMPLETED)
        if await core.settles_within(core.settings.kill_wait_s):
            return
    if core.settled:
        return
    ms = round(core.settings.kill_wait_s * 1000)
    leader = core.leader_status
    if leader is None:
        message = f"no end was seen within {ms} ms of SIGKILL"
    else:
        how = f"by {leader[1]}" if leader[1] is not None else f"with code {leader[0]}"
        message = (
            f"the command's leader ended {how}, but what it started was not seen gone within {ms} ms "
            "of SIGKILL: a process of its tree may still be alive"
        )
    core.fail_transport(TransportError(message))
