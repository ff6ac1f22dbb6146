"""Starting one command: pipes, environment, working directory, account, limits.

The start is synchronous (``subprocess.Popen`` returns once the program was
exec'd, or raises with the exec's errno), so ``stream()`` knows at once
whether the command started. Every failure becomes ``SpawnFailed`` and
leaves no descriptor behind.
"""

from __future__ import annotations

import errno
import os
import pwd
import resource
import signal
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ._terminal import Terminal
from .errors import InvalidArgument, SpawnFailed
from .options import CommandPlan

# What ran out, and what to do, per errno: a start that fails this way is a
# SpawnFailed like any other, and the same command may start once there is room.
_EXHAUSTION = {
    errno.EMFILE: "this process has run out of file descriptors (each running command holds some "
    "for its pipes): raise its limit (`ulimit -n`) or run fewer commands at once",
    errno.ENFILE: "the system's open file table is full: close files elsewhere or run fewer commands at once",
    errno.EAGAIN: "no new process could be created (the process limit, `ulimit -u`, or a pids cgroup, "
    "is reached): raise the limit or run fewer commands at once",
    errno.ENOMEM: "the host is out of memory: free memory or run fewer commands at once",
}

_RLIMITS = {
    "cpuSeconds": resource.RLIMIT_CPU,
    "addressSpaceBytes": resource.RLIMIT_AS,
    "fileSizeBytes": resource.RLIMIT_FSIZE,
    "openFiles": resource.RLIMIT_NOFILE,
}


@dataclass(frozen=True, slots=True)
class Account:
    """The identity a command runs as."""

    uid: int
    gid: int
    name: str | None
    home: str | None
    groups: tuple[int, ...]


@dataclass(slots=True)
class Spawned:
    """A started command: its Popen (kept so it is not reaped behind our back) and our pipe ends."""

    popen: subprocess.Popen[bytes]
    pid: int
    stdin_fd: int | None
    stdout_fd: int
    stderr_fd: int | None
    #: Under ``pty``: the terminal, whose master is ``stdout_fd`` and whose input is ``stdin_fd``.
    terminal: Terminal | None = None


def resolve_user(value: str) -> Account:
    """An account name or numeric uid, through the passwd database; unknown names are the caller's mistake."""
    try:
        entry = pwd.getpwnam(value)
    except KeyError:
        if not value.isdigit():
            raise InvalidArgument("options.user", f"no account named {value!r}") from None
        try:
            entry = pwd.getpwuid(int(value))
        except KeyError:
            # Known only by number: its own gid, and no supplementary groups beyond it.
            uid = int(value)
            return Account(uid, uid, None, None, (uid,))
    # The account's supplementary groups, never root's: setgroups is always called with them.
    groups = tuple(os.getgrouplist(entry.pw_name, entry.pw_gid))
    return Account(entry.pw_uid, entry.pw_gid, entry.pw_name, entry.pw_dir or None, groups)


def command_env(base: Mapping[bytes, bytes], plan: CommandPlan, account: Account | None) -> dict[bytes, bytes]:
    """The base environment, the account's identity (as su does), then the caller's variables."""
    env = dict(base)
    if account is not None and account.name is not None:
        env[b"USER"] = env[b"LOGNAME"] = os.fsencode(account.name)
    if account is not None and account.home is not None:
        env[b"HOME"] = os.fsencode(account.home)
    if plan.pty is not None:
        env[b"TERM"] = b"xterm-256color"  # a terminal's TERM, unless the call sets it (ADR-0052, T1)
    env.update(plan.env)
    return env


def command_cwd(plan: CommandPlan, default_cwd: bytes | None) -> bytes:
    """The working directory: a relative one resolves against the sandbox's default."""
    base = default_cwd if default_cwd is not None else os.getcwdb()
    return base if plan.cwd is None else os.path.join(base, plan.cwd)


def _limit_setter(limits: Mapping[str, int]) -> Callable[[], None]:
    # The CPU hard limit sits one second above the soft one, so the command
    # first gets SIGXCPU, which names the cause, rather than a bare SIGKILL.
    pairs = [
        (_RLIMITS[name], (value, value + 1) if name == "cpuSeconds" else (value, value))
        for name, value in limits.items()
    ]

    def apply() -> None:
        for which, pair in pairs:
            resource.setrlimit(which, pair)

    return apply


# Signals a person sends from a terminal: a command started on one acts on them as a fresh
# login would, even where this process was started with them ignored (inherited across exec).
_TERMINAL_SIGNALS = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM,
                     signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU, signal.SIGWINCH)


def _terminal_child(limits: Callable[[], None] | None) -> Callable[[], None]:
    """What the child runs before exec under a terminal: a new session on its terminal (stdio, already the slave)."""

    def setup() -> None:
        for signum in _TERMINAL_SIGNALS:
            try:
                signal.signal(signum, signal.SIG_DFL)
            except (OSError, ValueError):
                pass  # not the main thread: dispositions stay as inherited
        # setsid, the slave (fd 0) as controlling terminal, and it on 0, 1 and 2.
        os.login_tty(0)
        if limits is not None:
            limits()

    return setup


def spawn(plan: CommandPlan, env: Mapping[bytes, bytes], cwd: bytes, account: Account | None) -> Spawned:
    """Starts the command as the leader of a new process group; raises ``SpawnFailed``."""
    if plan.pty is not None:
        return _spawn_on_terminal(plan, env, cwd, account)
    ours: list[int] = []  # our ends, kept on success
    theirs: list[int] = []  # the child's ends, always closed here
    try:
        try:
            stdout_r, stdout_w = os.pipe2(os.O_CLOEXEC)
            ours.append(stdout_r)
            theirs.append(stdout_w)
            stderr_r, stderr_w = os.pipe2(os.O_CLOEXEC)
            ours.append(stderr_r)
            theirs.append(stderr_w)
            stdin_w: int | None = None
            stdin: int = subprocess.DEVNULL  # end-of-file from the start (SS-STDIN-4)
            if plan.stdin == "pipe":
                stdin, stdin_w = os.pipe2(os.O_CLOEXEC)
                ours.append(stdin_w)
                theirs.append(stdin)
            popen = subprocess.Popen(
                plan.argv_bytes,
                stdin=stdin,
                stdout=stdout_w,
                stderr=stderr_w,
                cwd=cwd,
                env=env,
                close_fds=True,
                process_group=0,
                user=None if account is None else account.uid,
                group=None if account is None else account.gid,
                extra_groups=None if account is None else list(account.groups),
                preexec_fn=None if not plan.limits else _limit_setter(plan.limits),
            )
        finally:
            for fd in theirs:
                os.close(fd)
    except (OSError, subprocess.SubprocessError, ValueError) as error:
        for fd in ours:
            os.close(fd)
        raise SpawnFailed(plan.argv, _with_argv_hint(_reason(error, cwd), plan), cause=error) from error
    for fd in ours:
        os.set_blocking(fd, False)
    return Spawned(popen, popen.pid, stdin_w, stdout_r, stderr_r)


def _spawn_on_terminal(plan: CommandPlan, env: Mapping[bytes, bytes], cwd: bytes, account: Account | None) -> Spawned:
    """Starts the command as the leader of a new session on a new pseudo-terminal of the plan's size."""
    assert plan.pty is not None
    terminal: Terminal | None = None
    try:
        terminal = Terminal(plan.pty)
        slave = terminal.slave
        assert slave is not None
        if account is not None and os.geteuid() == 0:
            os.fchown(slave, account.uid, -1)  # the command's own terminal, as login gives it
        popen = subprocess.Popen(
            plan.argv_bytes,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            env=env,
            close_fds=True,
            user=None if account is None else account.uid,
            group=None if account is None else account.gid,
            extra_groups=None if account is None else list(account.groups),
            preexec_fn=_terminal_child(None if not plan.limits else _limit_setter(plan.limits)),
        )
    except (OSError, subprocess.SubprocessError, ValueError) as error:
        if terminal is not None:
            terminal.close()
        raise SpawnFailed(plan.argv, _with_argv_hint(_reason(error, cwd), plan), cause=error) from error
    stdin_fd = terminal.input
    assert stdin_fd is not None
    return Spawned(popen, popen.pid, stdin_fd, terminal.take_master(), None, terminal)


def _reason(error: BaseException, cwd: bytes) -> str:
    """Why a start failed, in words a caller can act on."""
    if not isinstance(error, OSError):
        if isinstance(error, subprocess.SubprocessError) and "preexec_fn" in str(error):
            return "the resource limits could not be set (a limit above the hard limit?)"
        return str(error)
    code = error.errno
    name = errno.errorcode.get(code, str(code)) if code is not None else "error"
    if code in _EXHAUSTION:
        return f"{name}: {_EXHAUSTION[code]} ({error.strerror})"
    shown = os.fsdecode(cwd)
    # Popen names the working directory as the error's filename when chdir failed.
    if error.filename is not None and os.fsencode(error.filename) == cwd:
        if not os.path.exists(cwd):
            return f"{name}: the working directory {shown!r} does not exist"
        if not os.path.isdir(cwd):
            return f"{name}: the working directory {shown!r} is not a directory"
        return f"{name}: the working directory {shown!r} is not accessible ({error.strerror})"
    if code == errno.ENOENT:
        return f"{name}: no such executable {os.fsdecode(error.filename or b'')!r}"
    return f"{name}: {error.strerror}"


def _with_argv_hint(reason: str, plan: CommandPlan) -> str:
    """argv is never a shell line: ``['ls -la']`` looks for a program named "ls -la"; say how to write it."""
    program = plan.argv_bytes[0].decode("utf-8", "replace")
    words = program.split()
    if "no such executable" not in reason or len(words) < 2:
        return reason
    rest = [item.decode("utf-8", "replace") for item in plan.argv_bytes[1:]]
    hint = f"; argv is not a shell command line: use {words + rest!r}"
    if not rest:
        hint += f" or {['sh', '-c', program]!r}"
    return reason + hint
