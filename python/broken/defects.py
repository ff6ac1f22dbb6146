"""The Python adapter with exactly one defect each, for the kit to catch through the testee.

Each defect is a function that patches the real adapter in this process (a
broken testee serves nothing else) and returns the factory to serve. They
are the mistakes an adapter author makes in practice, so the kit is shown to
catch them in a language other than its own (ADR-0038).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import sandstream._core as core
import sandstream._ending as ending
import sandstream._group as group
import sandstream.sandbox as sandbox_module
from sandstream import CapabilityNotSupported, create_local_sandbox

Factory = Callable[[], Any]


def _replace(original: Callable[..., Any], replacement: Callable[..., Any]) -> None:
    """Puts ``replacement`` wherever the adapter's modules hold ``original``, however they import it.

    Patching each module by name would miss a module that starts using the
    function after a refactor, and the defect would silently vanish.
    """
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] != "sandstream" or module is None:
            continue
        for attribute, value in list(vars(module).items()):
            if value is original:
                setattr(module, attribute, replacement)


def leader_only_kill() -> Factory:
    """SIGTERM and SIGKILL go to the leader's pid, not its process group: what it started is never signalled.

    The adapter still waits for the group to empty, as the real one does, so a
    command whose child outlives it ends in ``TransportError`` after the kill
    wait, shortened to 1 s so that the cases finish soon (as the TypeScript
    kit's ``kills-only-leader`` does).
    """
    def signal_leader(pgid: int, signum: int) -> None:
        try:
            os.kill(pgid, signum)
        except ProcessLookupError:
            pass

    _replace(group.signal_group, signal_leader)
    return lambda: create_local_sandbox(kill_wait_ms=1000)


def dropped_last_chunk() -> Factory:
    """A streamed command's chunk is queued only once the next read of its pipe came; the last one is lost.

    As the TypeScript kit's ``drops-final-chunk``: the iteration of a
    Process loses the final chunk of each stream, while ``run()`` (and so
    every probe the kit runs) keeps all of its output.
    """
    deliver = core.ProcessCore._output

    def held_back(self: core.ProcessCore, stream: str, data: bytes) -> None:
        if self.mode != "stream":
            deliver(self, stream, data)  # type: ignore[arg-type]
            return
        held: dict[str, bytes] = self.__dict__.setdefault("_held_back", {})
        previous = held.get(stream)
        held[stream] = data
        if previous is not None:
            deliver(self, stream, previous)  # type: ignore[arg-type]

    core.ProcessCore._output = held_back  # type: ignore[method-assign]
    return create_local_sandbox


def exit_status_for_signal() -> Factory:
    """A command killed by signal n is reported as a shell would: exit code 128 + n, and no signal."""
    real = ending.status_of

    def as_shell_status(wait_status: int) -> tuple[int | None, str | None]:
        if os.WIFSIGNALED(wait_status):
            return 128 + os.WTERMSIG(wait_status), None
        return real(wait_status)

    _replace(real, as_shell_status)
    return create_local_sandbox


def late_capability_error() -> Factory:
    """A missing capability is found only once the command was started: the error is right, its moment is not."""
    check = sandbox_module.LocalSandbox._check

    def check_after_start(self: sandbox_module.LocalSandbox, operation: str, plan: Any) -> None:
        try:
            check(self, operation, plan)
        except CapabilityNotSupported:
            self._launch(plan, "run" if operation == "run()" else "stream")
            raise

    sandbox_module.LocalSandbox._check = check_after_start  # type: ignore[method-assign]
    return create_local_sandbox


#: The defects by the name a broken testee is started with.
DEFECTS: dict[str, Callable[[], Factory]] = {
    "leader-only-kill": leader_only_kill,
    "dropped-last-chunk": dropped_last_chunk,
    "exit-status-for-signal": exit_status_for_signal,
    "late-capability-error": late_capability_error,
}
