"""The state machine of one command, shared by ``run()`` and ``stream()``.

It starts the command, connects its pipes to the chunk queue (stream) or the
captures (run), arms the timeout and the caller's abort signal, watches the
leader through a pidfd, winds down what the leader left in its group, and
reports the result. It holds no reference to the public ``Process``, so that
object can be garbage-collected (and the leak caught) while the core lives.

The command is *settled* once the leader was reaped, no live process is left
in its group, and both output pipes reached end-of-file: only then is the end
reported (SS-TEAR-6, SS-TEAR-10).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from ._ending import Ending, Status, ending_error
from ._group import CommandTree
from ._guardian import GuardedGroup
from ._leader import LeaderWatch
from ._output_sink import OutputSink
from ._pipes import OutputReader, StdinPipe
from ._spawn import Spawned
from ._terminal import Terminal
from ._termination import run_termination
from .errors import SpawnFailed, TransportError
from .options import CommandPlan
from .results import ExecResult, StreamName

Mode = Literal["run", "stream"]

# The poll that waits for a leader's group to empty: first and longest interval.
_POLL_FIRST_S = 0.001
_POLL_MAX_S = 0.05
# Quiet polls, once nothing of the group is left and SIGKILL was sent, after
# which an output pipe held open from outside the group (setsid) is given up.
_QUIET_POLLS = 2


@dataclass(frozen=True, slots=True)
class CoreSettings:
    grace_s: float
    kill_wait_s: float
    high_water_mark: int


def _retrieve(future: asyncio.Future[object]) -> None:
    if not future.cancelled():
        future.exception()


class ProcessCore:
    """One command from its start to its settlement; ``run()`` and ``Process`` are views of it."""

    def __init__(self, id: str, plan: CommandPlan, mode: Mode, settings: CoreSettings,
                 start: Callable[[], Spawned]) -> None:
        self.loop = asyncio.get_running_loop()
        self.id = id
        self.plan = plan
        self.mode = mode
        self.settings = settings
        self.started_at = self.loop.time()
        self.pid: int | None = None
        self.leader_status: Status | None = None
        self.settled = False
        self._ended_at = self.started_at
        self._status: Status | None = None
        self._ending: Ending | None = None
        self._settled_future: asyncio.Future[None] = self.loop.create_future()
        self._start_future: asyncio.Future[None] = self.loop.create_future()
        self._start_future.add_done_callback(_retrieve)
        self._result: asyncio.Future[ExecResult] | None = None
        self._termination: asyncio.Future[None] | None = None
        self._disposal: asyncio.Task[None] | None = None
        self._sink = OutputSink(self.loop, mode == "stream", plan.on_output, plan.max_output_bytes,
                                settings.high_water_mark, self._apply_flow,
                                lambda error: self._end_because(Ending("callback-failed", error)))
        self.queue = self._sink.queue
        self.stdin: StdinPipe | None = None
        #: Under ``pty``: the command's terminal; its session, not its group, is the tree.
        self.terminal: Terminal | None = None
        self._readers: dict[str, OutputReader] = {}
        self._leader: LeaderWatch | None = None
        self._guard: GuardedGroup | None = None
        self._tree: CommandTree | None = None
        self._group_gone = False
        self._group_killed = False
        self._poll: asyncio.TimerHandle | None = None
        self._poll_delay = _POLL_FIRST_S
        self._quiet_polls = 0
        self._seen_at_poll = -1
        self._timer: asyncio.TimerHandle | None = None
        self._unsubscribe: Callable[[], None] | None = None

        if plan.signal is not None and plan.signal.aborted:
            # Already aborted: nothing starts (SS-TEAR-3).
            self._ending = Ending("aborted", plan.signal.reason, started=False)
            self._settle(None, None)
            return
        try:
            spawned = start()
        except SpawnFailed as error:
            self._settle(None, error)
            return
        self._watch(spawned)
        if plan.timeout is not None:
            # Counted from the call, as the spec measures it, not from the end of the start.
            self._timer = self.loop.call_at(self.started_at + plan.timeout, self._end_because, Ending("timed-out"))
        if plan.signal is not None:
            reason_of = plan.signal
            self._unsubscribe = plan.signal.add_listener(
                lambda: self._end_because(Ending("aborted", reason_of.reason)))

    # ---- start ------------------------------------------------------------

    def _watch(self, spawned: Spawned) -> None:
        self.pid = spawned.pid
        self.terminal = spawned.terminal
        self._tree = CommandTree(spawned.pid, session=self.terminal is not None)
        # Now, while the leader is our child and not reaped: its pid is still its own (SS-OWNER-1).
        self._guard = GuardedGroup.register(spawned.pid, self.settings.grace_s * 1000, session=self.terminal is not None)
        for name, fd in (("stdout", spawned.stdout_fd), ("stderr", spawned.stderr_fd)):
            if fd is not None:  # a terminal is one stream: stdout
                self._readers[name] = OutputReader(
                    self.loop, fd, lambda data, name=name: self._output(name, data), self._pipe_ended)
        if spawned.stdin_fd is not None:
            self.stdin = StdinPipe(self.loop, spawned.stdin_fd, terminal=self.terminal is not None)
            if self.plan.input is not None:
                self.stdin.write(self.plan.input).add_done_callback(self._input_written)
                self.stdin.end()
            elif self.terminal is not None and not self.plan.interactive:
                # A terminal nobody writes to gets end-of-file at once, as an ignored pipe gives it (T3).
                self.stdin.end()
        self._leader = LeaderWatch(self.loop, spawned.popen, self._leader_exited)
        self._start_future.set_result(None)

    def _input_written(self, future: asyncio.Future[None]) -> None:
        # A command that exits without reading all of its input is fine (StdinClosed);
        # a write whose delivery is uncertain makes the result untrustworthy.
        error = None if future.cancelled() else future.exception()
        if isinstance(error, TransportError) and not self.settled:
            self._ending = Ending("failed", error)
            self.terminate()

    @property
    def command_id(self) -> str | None:
        """The pid as a string: the local backend's own id for the command."""
        return None if self.pid is None else str(self.pid)

    # ---- output -----------------------------------------------------------

    def _output(self, stream: StreamName, data: bytes) -> None:
        if not self.settled:
            self._sink.deliver(stream, data)

    def _apply_flow(self) -> None:
        if self.queue is None or self.settled:
            return
        for reader in self._readers.values():
            if self.queue.paused:
                reader.pause()
            else:
                reader.resume()
        if not self.queue.paused and self.leader_status is not None:
            self._check_finished()

    @property
    def paused(self) -> bool:
        return self.queue is not None and self.queue.paused

    def when_resumed(self) -> asyncio.Future[None]:
        return self.queue.when_resumed() if self.queue is not None else self.loop.create_future()

    # ---- the leader and its group -----------------------------------------

    def _leader_exited(self, status: Status) -> None:
        self.leader_status = status
        if self.settled:
            return  # settled as lost earlier; now at least it is reaped
        if self._group_killed:
            try:
                self._signal_group(signal.SIGKILL)  # a member forked while SIGKILL was on its way
            except OSError:
                pass  # best effort: the poll keeps watching the group, the kill wait bounds it
        self._check_finished()
        if not self.settled:
            # Its timeout and the caller's signal no longer count against it; what it
            # left in its group is wound down with the same sequence (SS-TEAR-10).
            self._disarm()
            self.terminate()

    def _pipe_ended(self) -> None:
        if self.leader_status is not None:
            self._check_finished()

    def _check_finished(self) -> None:
        """Settles once the leader is reaped, the group is empty and the pipes are closed."""
        if self._poll is not None:
            self._poll.cancel()
            self._poll = None
        if self.settled or self.leader_status is None or self._tree is None:
            return
        if not self._group_gone and not self._tree.alive():
            self._group_gone = True
        if self.terminal is not None and self._group_gone:
            self.terminal.session_gone()  # the master now drains to its end (EIO)
        if not any(reader.open for reader in self._readers.values()):
            if self._group_gone:
                self._settle(self.leader_status, None)
            else:
                self._schedule_poll()  # members without our pipes linger: SIGKILL ends them
            return
        if self.terminal is not None and not self._group_gone:
            # Nothing tells of a session's end but a look: the poll watches it, and
            # repeats SIGKILL for a process forked while it was on its way.
            if self._group_killed:
                try:
                    self._signal_group(signal.SIGKILL)
                except OSError:
                    pass  # the kill wait bounds it
            self._schedule_poll()
            return
        # The pipes are open: end-of-file, SIGKILL or resumed reading call again, except when
        # the group is gone yet no end-of-file comes, because a process that left the group
        # holds a pipe; that pipe is given up once quiet after SIGKILL.
        if not self._group_killed or self.paused:
            return
        if self._group_gone and self._give_up_when_quiet():
            return
        self._schedule_poll()

    def _schedule_poll(self) -> None:
        self._poll = self.loop.call_later(self._poll_delay, self._check_finished)
        self._poll_delay = min(self._poll_delay * 2, _POLL_MAX_S)

    def _give_up_when_quiet(self) -> bool:
        seen = sum(reader.bytes_seen for reader in self._readers.values())
        if seen == self._seen_at_poll and self._quiet_polls >= _QUIET_POLLS:
            for reader in self._readers.values():
                reader.close()
            self._settle(self.leader_status, None)
            return True
        self._quiet_polls = self._quiet_polls + 1 if seen == self._seen_at_poll else 0
        self._seen_at_poll = seen
        return False

    def _signal_group(self, signum: int) -> None:
        """Signals the command's tree (its group, or its session under a terminal) while it lives."""
        if self._tree is not None and not self._group_gone:
            self._tree.signal(signum)

    def signal(self, signum: int) -> None:
        """Sends one signal to the command's process group (its session under a terminal); nothing once settled or gone."""
        if self.settled:
            return
        self._signal_group(signum)
        if signum == signal.SIGKILL and not self._group_killed:
            # From now on a pipe still open after the group is gone is held from outside it.
            self._group_killed = True
            if self.leader_status is not None:
                self._check_finished()

    # ---- ending -----------------------------------------------------------

    def _end_because(self, ending: Ending) -> None:
        if self.settled:
            return
        if self._ending is None:
            self._ending = ending
        self.terminate()

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _settle(self, status: Status | None, failure: BaseException | None) -> None:
        if self.settled:
            return
        self.settled = True
        self._ended_at = self.loop.time()
        self._status = status
        if failure is not None and (self._ending is None or self._ending.kind != "failed"):
            self._ending = Ending("failed", failure)
        self._disarm()
        self._release()
        if self._guard is not None:
            tree, gone = self._tree, self._group_gone
            self._guard.forget_once_gone(lambda: not gone and tree is not None and tree.alive())
        if self.queue is not None:
            self.queue.end(self.terminal_error(True))
        if not self._start_future.done():
            self._start_future.set_exception(self.terminal_error(self.mode == "stream")
                                             or TransportError("the command never started"))
        self._settled_future.set_result(None)

    def _release(self) -> None:
        """Frees the pipes now, not only when someone disposes; a leader not yet reaped stays watched."""
        if self._poll is not None:
            self._poll.cancel()
            self._poll = None
        for reader in self._readers.values():
            reader.close()
        if self.stdin is not None:
            self.stdin.close()
        if self.terminal is not None:
            self.terminal.close()

    def fail_transport(self, error: TransportError) -> None:
        """The command's end could not be confirmed: its fate is unknown."""
        self._settle(None, error)

    def terminal_error(self, streamed: bool) -> BaseException | None:
        """The error the command ended with, if any, for iteration (``streamed``) or ``run()``."""
        return ending_error(self._ending, lambda: self.build_result(streamed))

    def build_result(self, streamed: bool) -> ExecResult:
        status = self._status or (None, None)
        return ExecResult(
            exit_code=status[0],
            signal=status[1],
            stdout=b"" if streamed else self._sink.captured("stdout"),
            stderr=b"" if streamed else self._sink.captured("stderr"),
            streamed=streamed,
            timed_out=self._ending is not None and self._ending.kind == "timed-out",
            stdout_truncated=not streamed and self._sink.truncated("stdout"),
            stderr_truncated=not streamed and self._sink.truncated("stderr"),
            duration_ms=max(0.0, (self._ended_at - self.started_at) * 1000),
        )

    # ---- what the public objects await ------------------------------------

    def when_settled(self) -> asyncio.Future[None]:
        return self._settled_future

    async def settles_within(self, seconds: float) -> bool:
        if not self.settled and seconds > 0:
            await asyncio.wait([self._settled_future], timeout=seconds)
        return self.settled

    def started(self) -> asyncio.Future[None]:
        return self._start_future

    def result(self) -> asyncio.Future[ExecResult]:
        """The terminal result, one future for every caller; unread output is handled as the queue says."""
        if self._result is None:
            if self.queue is not None:
                self.queue.result_requested()
            self._result = self.loop.create_future()
            self._result.add_done_callback(_retrieve)
            self._settled_future.add_done_callback(self._deliver_result)
        return self._result

    def _deliver_result(self, _: object) -> None:
        assert self._result is not None
        streamed = self.mode == "stream"
        error = self.terminal_error(streamed)
        if error is not None:
            self._result.set_exception(error)
        else:
            self._result.set_result(self.build_result(streamed))

    def terminate(self) -> asyncio.Future[None]:
        """SIGTERM (after SIGHUP under a terminal), SIGKILL after the grace period, a bounded wait; one sequence for every cause."""
        if self._termination is None:
            if self.settled:
                done: asyncio.Future[None] = self.loop.create_future()
                done.set_result(None)
                return done
            if self.queue is not None:
                self.queue.allow_teardown_slack()
            self._termination = self.loop.create_task(run_termination(self))
        return self._termination

    def dispose(self) -> asyncio.Task[None]:
        """Discards unread output, terminates, waits; raises ``TransportError`` when the end is unknown."""
        if self._disposal is None:
            self._disposal = self.loop.create_task(self._run_dispose())
            self._disposal.add_done_callback(_retrieve)
        return self._disposal

    async def _run_dispose(self) -> None:
        if self.queue is not None:
            self.queue.discard()
        await self.terminate()
        ending = self._ending
        if ending is not None and ending.kind == "failed" and isinstance(ending.cause, TransportError):
            raise ending.cause
