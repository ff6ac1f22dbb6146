/**
 * How the envd emulator starts a command as envd does: through `/bin/sh`,
 * which execs it, as the account of the request's Basic auth, with envd's
 * working directory and environment rules, a stdin pipe unless the request
 * says `stdin: false`, and the start's deadline from `Connect-Timeout-Ms`.
 * With `pty`, on a new pseudo-terminal of the size asked instead of pipes,
 * as the leader of a session whose controlling terminal it is (envd:
 * creack/pty's `StartWithSize`, `Setsid` and `Setctty`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { statSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { Code, ConnectError } from '@connectrpc/connect';
import { processState } from '@sandstream/remote/emulator';
import type { ProcessConfig, StartRequest } from '../gen/envd-process_pb.js';
import { basicUser, findAccount } from './accounts.js';
import { Command } from './command.js';
import type { Envd } from './context.js';
import { shieldMasters, Terminal, terminalUnavailable } from './terminal.js';
import type { EmulatedProcess } from './types.js';

function configOf(config: ProcessConfig | undefined): EmulatedProcess['config'] {
  return {
    cmd: config?.cmd ?? '',
    args: [...(config?.args ?? [])],
    envs: { ...(config?.envs ?? {}) },
    cwd: config?.cwd,
  };
}

/**
 * The working directory as envd resolves it (internal/permissions/path.go,
 * `ExpandAndResolve`): the request's, else the configured default; `~` and
 * `~/x` in the account's home (`~name` is refused); a relative one joined to
 * the account's home, not to the default; none at all, the home.
 */
function workingDirectory(requested: string | undefined, configured: string | undefined, home: string): string {
  let path = requested === undefined || requested === '' ? (configured ?? '') : requested;
  if (path.startsWith('~')) {
    if (path.length > 1 && path[1] !== '/' && path[1] !== '\\') throw new ConnectError(`failed to expand path '${path}': cannot expand user-specific home dir`, Code.InvalidArgument);
    path = join(home, path.slice(1));
  }
  return isAbsolute(path) ? path : resolve(home, path);
}

/** Starts the command a Start request names; throws the Connect error envd answers when it cannot. */
export async function startCommand(envd: Envd, request: StartRequest, req: IncomingMessage): Promise<Command> {
  const config = configOf(request.process);
  // The account named in Basic auth, else the emulator's own (envd's default user).
  const username = basicUser(req);
  const account = username === undefined ? undefined : findAccount(username);
  const switching = account !== undefined && account.uid !== process.getuid?.();
  if (switching && process.getuid?.() !== 0) {
    throw new ConnectError(`the emulator does not run as root and cannot run commands as '${account.name}'`, Code.PermissionDenied);
  }
  const cwd = workingDirectory(config.cwd, envd.options.cwd, account?.home ?? homedir());
  try {
    if (!statSync(cwd).isDirectory()) throw new Error('not a directory');
  } catch {
    throw new ConnectError(`cwd '${cwd}' does not exist`, Code.InvalidArgument);
  }
  const env: Record<string, string> = {
    PATH: process.env['PATH'] ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: account?.home ?? process.env['HOME'] ?? homedir(),
    USER: account?.name ?? process.env['USER'] ?? 'user',
    LOGNAME: account?.name ?? process.env['LOGNAME'] ?? process.env['USER'] ?? 'user',
    ...envd.options.env,
    ...(account === undefined ? {} : { HOME: account.home, USER: account.name, LOGNAME: account.name }),
    ...config.envs,
  };
  const userCommand = [config.cmd, ...config.args].join(' ');
  const terminal = request.pty === undefined ? undefined : openTerminal(request.pty.size, userCommand, cwd);
  // envd keeps a stdin pipe unless the request says `stdin: false`, and none on a terminal.
  const keepStdin = terminal === undefined && (request.stdin ?? true);
  const refused = (error: Error): ConnectError => {
    terminal?.close();
    return new ConnectError(`error starting process '${userCommand}': ${error.message}`, Code.InvalidArgument);
  };
  // Through a shell that execs the command, as envd runs every one (handler.go, `New`: its OOM
  // score and priority wrapper): a missing executable starts, says so on stderr, and ends 127.
  // On a terminal, `setsid --ctty` first (not detached, so it calls setsid() without forking and
  // the pid is the command's): the command leads a session with the terminal as its own.
  const argv = ['/bin/sh', '-c', 'exec "$@"', '--', config.cmd, ...config.args];
  let child: ChildProcess;
  try {
    child = spawn(terminal === undefined ? argv[0]! : 'setsid', terminal === undefined ? argv.slice(1) : ['--ctty', '--', ...argv], {
      cwd,
      env,
      stdio: terminal?.stdio() ?? shieldMasters([keepStdin ? 'pipe' : 'ignore', 'pipe', 'pipe']),
      ...(switching ? { uid: account.uid, gid: account.gid } : {}),
    });
  } catch (error) {
    // Node throws some exec failures (E2BIG: an argument or the
    // environment too long for the shell's exec) instead of emitting them: the same answer.
    throw refused(error as Error);
  }
  // The command has the slave now: the emulator lets go of its own, as envd does.
  terminal?.spawned();
  // Read before the event loop can reap it: the start time tells this
  // command's group from a later one that reuses its number.
  const leaderStartTicks = child.pid === undefined ? undefined : processState(child.pid)?.startTicks;
  await new Promise<void>((resolveSpawn, rejectSpawn) => {
    child.once('spawn', resolveSpawn);
    child.once('error', (error) => {
      if (child.pid === undefined) rejectSpawn(refused(error));
    });
  });
  const command = new Command(
    child,
    child.pid!,
    config,
    request.tag,
    keepStdin,
    (ended) => {
      envd.running.delete(ended.pid);
    },
    terminal,
  );
  const sandboxHeader = req.headers['e2b-sandbox-id'];
  command.sandboxId = typeof sandboxHeader === 'string' ? sandboxHeader : undefined;
  command.user = account?.name;
  command.leaderStartTicks = leaderStartTicks;
  envd.table.add(command);
  envd.running.set(command.pid, command);
  const timeout = Number(req.headers['connect-timeout-ms']);
  if (Number.isFinite(timeout) && timeout > 0) command.killAfter(timeout);
  return command;
}

/**
 * A terminal of the size a Start asks (envd truncates each to 16 bits, as
 * its `pty.Winsize` holds them); throws the Connect error the client gets.
 */
function openTerminal(size: { readonly cols: number; readonly rows: number } | undefined, userCommand: string, cwd: string): Terminal {
  const cols = (size?.cols ?? 0) & 0xffff;
  const rows = (size?.rows ?? 0) & 0xffff;
  const unavailable = terminalUnavailable();
  if (unavailable !== undefined) throw new ConnectError(`the emulator cannot open terminals here: ${unavailable}`, Code.Unimplemented);
  const failed = (reason: string): ConnectError =>
    new ConnectError(`error starting pty with command '${userCommand}' in dir '${cwd}' with '${cols}' cols and '${rows}' rows: ${reason}`, Code.InvalidArgument);
  // envd would open a terminal of 0 columns or rows; the library cannot (it takes 0 for its default, 80x24).
  if (cols === 0 || rows === 0) throw failed('the emulator opens no terminal with zero columns or rows');
  try {
    return new Terminal(cols, rows);
  } catch (error) {
    throw failed((error as Error).message);
  }
}
