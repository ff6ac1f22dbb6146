"""The local sandbox: commands as child processes of this Python process.

    async with create_local_sandbox() as sb:
        result = await sb.run(["echo", "hello"])
        async with sb.stream(["sh", "-c", "make 2>&1"]) as proc:
            async for chunk in proc:
                ...

Each command leads its own process group; teardown signals the group, never
the leader alone. Not a security boundary: commands run with this process's
account (or another, as root), filesystem and network.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, Literal

from ._core import CoreSettings, Mode, ProcessCore
from ._shielded import complete
from ._spawn import command_cwd, command_env, resolve_user, spawn
from .abort import AbortSignal
from .errors import AbortError, CapabilityNotSupported, InvalidArgument, SandboxClosed
from .manifest import DEFAULT_GRACE_MS, DEFAULT_KILL_WAIT_MS, OWNER_LOSS_MARGIN_MS, Termination, local_manifest
from .options import CommandPlan, ResourceLimits, TerminalSize, check_cwd, check_env, non_negative_number, plan_command, positive_integer
from .process import Process
from .results import ExecResult, OutputChunk

__all__ = ["LocalSandbox", "create_local_sandbox", "DEFAULT_HIGH_WATER_MARK"]

#: Unread bytes of one Process at which reading its pipes pauses.
DEFAULT_HIGH_WATER_MARK = 4 * 1024 * 1024

Limits = ResourceLimits | Mapping[str, int]
Size = TerminalSize | Mapping[str, int]
Input = bytes | bytearray | memoryview | str


def _required(plan: CommandPlan) -> list[str]:
    needed = []
    # What the caller asked for: a terminal's own input is the pty capability's.
    if plan.interactive or plan.input is not None:
        needed.append("stdin")
    if plan.pty is not None:
        needed.append("pty")
    if plan.limits is not None:
        needed.append("resource-limits")
    if plan.user is not None:
        needed.append("user")
    if plan.background:
        needed.append("attach")
    return needed


class LocalSandbox:
    """Runs commands as local child processes. Obtain one with ``create_local_sandbox()``.

    Use it from one event loop. ``close()`` (or leaving ``async with``)
    terminates every command it started and refuses new ones.
    """

    def __init__(self, *, name: str, capabilities: dict[str, bool], termination: Termination,
                 high_water_mark: int, base_env: dict[bytes, bytes], default_cwd: bytes | None) -> None:
        self._name = name
        self._capabilities = capabilities
        self._termination = termination
        self._settings = CoreSettings(termination.grace_ms / 1000, termination.kill_wait_ms / 1000, high_water_mark)
        self._base_env = base_env
        self._default_cwd = default_cwd
        self._live: set[ProcessCore] = set()
        self._counter = itertools.count(1)
        self._closing: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        """The adapter's name, as reports print it."""
        return self._name

    @property
    def capabilities(self) -> dict[str, bool]:
        """The capability manifest, exactly as the spec's JSON (a fresh copy; it never changes)."""
        return dict(self._capabilities)

    @property
    def termination(self) -> Termination:
        """The grace period and kill wait every termination uses (SS-TERM-1), and the bound of owner loss (SS-OWNER-2)."""
        return self._termination

    @property
    def native(self) -> None:
        """No backend handle: the backend is this process's kernel."""
        return None

    @property
    def closed(self) -> bool:
        """True once ``close()`` was called."""
        return self._closing is not None

    def _check(self, operation: str, plan: CommandPlan) -> None:
        for capability in _required(plan):
            if not self._capabilities.get(capability, False):
                raise CapabilityNotSupported(capability, operation)

    def _launch(self, plan: CommandPlan, mode: Mode) -> ProcessCore:
        # The account is looked up before anything starts: an unknown one is InvalidArgument.
        account = None if plan.user is None else resolve_user(plan.user)
        env = command_env(self._base_env, plan, account)
        cwd = command_cwd(plan, self._default_cwd)
        core = ProcessCore(f"{self._name}:{next(self._counter)}", plan, mode, self._settings,
                           lambda: spawn(plan, env, cwd, account))
        if not core.settled:
            self._live.add(core)
            core.when_settled().add_done_callback(lambda _: self._live.discard(core))
        return core

    async def run(
        self,
        argv: list[str | bytes] | tuple[str | bytes, ...],
        *,
        timeout: float | None = None,
        env: Mapping[str | bytes, str | bytes] | None = None,
        cwd: str | bytes | os.PathLike[str] | None = None,
        signal: AbortSignal | None = None,
        limits: Limits | None = None,
        user: str | None = None,
        input: Input | None = None,
        max_output_bytes: int | None = None,
        on_output: Callable[[OutputChunk], Any] | None = None,
        pty: Size | None = None,
    ) -> ExecResult:
        """Runs a command to its end and returns its ``ExecResult`` with the output captured.

        ``timeout`` is in seconds from the call; on expiry the command is
        terminated and the result has ``timed_out=True``. ``max_output_bytes``
        (default 64 MiB) caps what is kept of each stream, which is still
        drained and passed to ``on_output``; a raising ``on_output`` ends the
        command with ``CallbackFailed``. A failing exit code, a signal or a
        timeout is a result, not an error. Raises ``InvalidArgument``,
        ``CapabilityNotSupported`` or ``SandboxClosed`` before anything
        starts; ``SpawnFailed``, ``AbortError``, ``TransportError`` after.
        Cancelling the awaiting task terminates the command first.
        ``pty={"cols": 80, "rows": 24}`` (capability ``pty``) runs it on a
        pseudo-terminal: ``stdout`` holds the terminal's bytes, ``stderr``
        stays empty, and ``input`` is typed, followed by end-of-file.
        """
        if self._closing is not None:
            raise SandboxClosed()
        plan = plan_command(argv, call="run", timeout=timeout, env=env, cwd=cwd, signal=signal, limits=limits,
                            user=user, input=input, max_output_bytes=max_output_bytes, on_output=on_output, pty=pty)
        self._check("run()", plan)
        if plan.signal is not None and plan.signal.aborted:
            raise AbortError(None, cause=plan.signal.reason)
        core = self._launch(plan, "run")
        try:
            return await asyncio.shield(core.result())
        finally:
            try:
                await complete(core.dispose())
            except Exception:
                pass  # the result (or its error) already says how the command ended

    def stream(
        self,
        argv: list[str | bytes] | tuple[str | bytes, ...],
        *,
        timeout: float | None = None,
        env: Mapping[str | bytes, str | bytes] | None = None,
        cwd: str | bytes | os.PathLike[str] | None = None,
        signal: AbortSignal | None = None,
        limits: Limits | None = None,
        user: str | None = None,
        input: Input | None = None,
        stdin: Literal["pipe", "ignore"] | None = None,
        background: bool | None = None,
        pty: Size | None = None,
    ) -> Process:
        """Starts a command and returns its ``Process`` at once; call it with the event loop running.

        ``stdin="pipe"`` gives the Process a writer (``proc.stdin``); the
        default gives the command an empty standard input. Raises
        ``InvalidArgument``, ``CapabilityNotSupported`` or ``SandboxClosed``
        before anything starts; a start that fails (``SpawnFailed``) is raised
        by ``started()``, ``wait()`` and iteration. ``background=True`` needs
        the ``attach`` capability, which this adapter does not have.
        ``pty={"cols": 80, "rows": 24}`` (capability ``pty``) runs it on a
        pseudo-terminal: one ``stdout`` stream, ``proc.stdin`` types
        keystrokes (its ``end()`` types end-of-file), ``proc.resize()`` sets
        the size, and teardown hangs the session up first.
        """
        asyncio.get_running_loop()  # before any side effect: the Process lives on the loop
        if self._closing is not None:
            raise SandboxClosed()
        if not self._capabilities.get("streaming", False):
            raise CapabilityNotSupported("streaming", "stream()")
        plan = plan_command(argv, call="stream", timeout=timeout, env=env, cwd=cwd, signal=signal, limits=limits,
                            user=user, input=input, stdin=stdin, background=background, pty=pty)
        self._check("stream()", plan)
        return Process(self._launch(plan, "stream"))

    async def attach(self, command_id: str, *, replay: bool | None = None, **options: object) -> Process:
        """Background commands are not supported: raises ``CapabilityNotSupported`` (``attach``).

        The capability is checked before anything else, as the spec orders it,
        so an option of a later spec revision is refused the same way.
        """
        if self._closing is not None:
            raise SandboxClosed()
        raise CapabilityNotSupported("attach", "attach()")

    async def commands(self) -> list[dict[str, Any]]:
        """Background commands are not supported: raises ``CapabilityNotSupported`` (``attach``)."""
        if self._closing is not None:
            raise SandboxClosed()
        raise CapabilityNotSupported("attach", "commands()")

    async def close(self) -> None:
        """Terminates every command this sandbox started, concurrently, and refuses new ones.

        Idempotent; completes even if the awaiting task is cancelled meanwhile.
        """
        if self._closing is None:
            self._closing = asyncio.get_running_loop().create_task(self._close_all())
        await complete(self._closing)

    aclose = close

    async def _close_all(self) -> None:
        # One budget for all: the terminations run at once, each bounded by its own sequence.
        await asyncio.gather(*(core.dispose() for core in list(self._live)), return_exceptions=True)

    async def __aenter__(self) -> LocalSandbox:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<LocalSandbox {self._name} {'closed' if self.closed else 'open'} live={len(self._live)}>"


def create_local_sandbox(
    *,
    name: str = "python-local",
    cwd: str | bytes | os.PathLike[str] | None = None,
    env: Mapping[str | bytes, str | bytes] | None = None,
    grace_ms: float = DEFAULT_GRACE_MS,
    kill_wait_ms: float | None = None,
    high_water_mark: int = DEFAULT_HIGH_WATER_MARK,
    capabilities: Mapping[str, bool] | None = None,
) -> LocalSandbox:
    """Creates a sandbox that runs commands as local child processes.

    ``cwd`` is the default working directory (and the base of a relative
    per-command ``cwd``); ``env`` the base environment (default: this
    process's, bytes-exact). ``grace_ms`` separates SIGTERM from SIGKILL;
    ``kill_wait_ms`` (default the larger of 5000 and ``grace_ms`` + 1000) bounds
    the wait for the end after SIGKILL. Should this process end without
    ending its commands, their trees are gone within ``grace_ms`` + 1000 ms
    (``termination.owner_loss_ms``). ``capabilities`` turns capabilities
    off (never on). Raises ``InvalidArgument`` naming a bad setting.
    """
    if not isinstance(name, str) or not name:
        raise InvalidArgument("options.name", "must be a non-empty string")
    grace = non_negative_number("options.graceMs", grace_ms)
    kill_wait = (max(DEFAULT_KILL_WAIT_MS, grace + 1000) if kill_wait_ms is None
                 else non_negative_number("options.killWaitMs", kill_wait_ms))
    mark = positive_integer("options.highWaterMark", high_water_mark)
    default_cwd = None if cwd is None else os.path.abspath(check_cwd(cwd, "options.cwd"))  # fixed now: a later chdir moves nothing
    base_env = dict(os.environb) if env is None else check_env(env, "options.env")
    return LocalSandbox(
        name=name,
        capabilities=local_manifest(capabilities),
        termination=Termination(grace, kill_wait, grace + OWNER_LOSS_MARGIN_MS),
        high_water_mark=mark,
        base_env=base_env,
        default_cwd=default_cwd,
    )
