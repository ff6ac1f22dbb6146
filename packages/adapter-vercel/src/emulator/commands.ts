/**
 * The emulator's commands: real local processes started as the API starts
 * them (detached, or attached with its logs in the answer), their output
 * decoded into log records, their exit, and the kill endpoint.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { IncomingMessage } from 'node:http';
import { constants } from 'node:os';
import { resolve } from 'node:path';
import { streamLogs } from './logs.js';
import { pushRecords } from './output-store.js';
import { COMMAND_VARIABLE, SESSION_VARIABLE } from './proc.js';
import { HttpError, isRecord, newId, type CommandState, type Out, type SessionState, type VercelState } from './state.js';

function signalNumber(signal: NodeJS.Signals | null): number {
  if (signal === null) return 0;
  return (constants.signals as Record<string, number>)[signal] ?? 0;
}

/** The variables of a request's `env`, defined, not assigned: a variable named `__proto__` is one like any other. */
function variables(into: Record<string, string>, env: unknown): Record<string, string> {
  if (isRecord(env)) {
    for (const [k, v] of Object.entries(env)) Object.defineProperty(into, k, { value: String(v), enumerable: true, writable: true, configurable: true });
  }
  return into;
}

export function commandJson(command: CommandState): Record<string, unknown> {
  return {
    id: command.id,
    name: command.name,
    args: command.args,
    cwd: command.cwd,
    sessionId: command.sessionId,
    exitCode: command.exitCode,
    startedAt: command.startedAt,
    ...(command.durationMs === undefined ? {} : { durationMs: command.durationMs }),
  };
}

/** `POST .../cmd`: starts a command; attached (`wait: true`), the answer streams its logs and its end. */
export async function startCommand(state: VercelState, session: SessionState, body: unknown, out: Out): Promise<void> {
  if (!isRecord(body) || typeof body['command'] !== 'string' || body['command'] === '') {
    throw new HttpError(400, 'bad_request', 'command must be a non-empty string');
  }
  const args = Array.isArray(body['args']) ? body['args'].map(String) : [];
  const env = variables({ ...(state.options.env ?? (process.env as Record<string, string>)) }, body['env']);
  const cwd = typeof body['cwd'] === 'string' && body['cwd'] !== '' ? resolve(state.cwd, body['cwd']) : state.cwd;
  const cmdId = newId('cmd');
  env[SESSION_VARIABLE] = session.id;
  env[COMMAND_VARIABLE] = cmdId;
  const withStdin = state.options.stdin === true;
  let child: ChildProcess;
  try {
    child = spawn(body['command'], args, {
      cwd,
      env,
      stdio: [withStdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      // Its own process group, so the emulator's own signals never reach it by accident.
      detached: true,
    });
  } catch (error) {
    throw new HttpError(400, 'bad_request', `the command could not be started: ${String(error)}`);
  }
  await new Promise<void>((resolveSpawn, rejectSpawn) => {
    child.once('spawn', () => resolveSpawn());
    child.once('error', (error: NodeJS.ErrnoException) => {
      if (child.pid === undefined) {
        rejectSpawn(new HttpError(400, 'bad_request', `the command could not be started: ${error.code ?? ''} ${error.message}`));
      }
    });
  });
  const command: CommandState = {
    env: variables({}, body['env']),
    id: cmdId,
    name: body['command'],
    args,
    cwd,
    sessionId: session.id,
    startedAt: Date.now(),
    child,
    exitCode: null,
    durationMs: undefined,
    records: [],
    ended: false,
    listeners: new Set(),
    exitWaiters: new Set(),
    stdinConfirmed: 0,
    stdinOpen: withStdin,
    stdinWriting: Promise.resolve(),
    timer: undefined,
  };
  session.commands.set(cmdId, command);
  attach(state, command);
  const timeout = body['timeout'];
  if (typeof timeout === 'number' && timeout > 0) {
    // The command timeout: the service ends the command (its own process).
    command.timer = setTimeout(() => {
      if (command.exitCode === null) signalLeader(command, 'SIGKILL');
    }, timeout);
  }
  if (body['wait'] === true) {
    const res = out.stream();
    res.write(`${JSON.stringify({ command: commandJson(command) })}\n`);
    // Attached: the start record, the logs when the request asks for them (`logs: true`, as the
    // SDK's runCommand does; the service sends none otherwise), then the finished command.
    await streamLogs(state, command, res, out.record, () => {
      res.write(`${JSON.stringify({ command: commandJson(command) })}\n`);
    }, body['logs'] === true);
    return;
  }
  out.json(200, { command: commandJson(command) });
}

/** Signals the command's own process (the service's kill: not its tree). */
export function signalLeader(command: CommandState, signal: NodeJS.Signals | number): void {
  if (command.exitCode !== null || command.child.pid === undefined) return;
  try {
    process.kill(command.child.pid, signal);
  } catch {
    // Gone meanwhile.
  }
}

function attach(state: VercelState, command: CommandState): void {
  const { child } = command;
  const notify = (): void => {
    const listeners = [...command.listeners];
    command.listeners.clear();
    for (const listener of listeners) listener();
  };
  const flushes: Array<() => void> = [];
  for (const stream of ['stdout', 'stderr'] as const) {
    // A streaming decoder: a character split across reads is decoded whole;
    // invalid bytes become U+FFFD, as the WHATWG decoder replaces them.
    const decoder = new TextDecoder('utf-8');
    const pipe = child[stream]!;
    let flushed = false;
    // The end of the pipe: an incomplete sequence left in the decoder becomes U+FFFD.
    const flush = (): void => {
      if (flushed) return;
      flushed = true;
      const tail = decoder.decode();
      if (tail !== '') pushRecords(state.output, command.records, stream, tail);
    };
    flushes.push(flush);
    pipe.on('data', (data: Buffer) => {
      const text = decoder.decode(data, { stream: true });
      if (text !== '') pushRecords(state.output, command.records, stream, text);
      notify();
    });
    pipe.on('error', () => undefined);
    pipe.once('close', () => {
      flush();
      notify();
    });
  }
  child.stdin?.on('error', () => undefined);
  child.once('exit', (code, signal) => {
    clearTimeout(command.timer);
    command.exitCode = code ?? 128 + signalNumber(signal);
    command.durationMs = Date.now() - command.startedAt;
    command.stdinOpen = false;
    for (const waiter of command.exitWaiters) waiter();
    command.exitWaiters.clear();
    notify();
  });
  child.once('close', () => {
    // After the leader exited and both pipes closed (whoever held them). The
    // child's own 'close' can come before the pipes' listeners ran: flush first.
    for (const flush of flushes) flush();
    command.ended = true;
    notify();
  });
}

export function whenExited(command: CommandState, req: IncomingMessage): Promise<void> {
  if (command.exitCode !== null) return Promise.resolve();
  return new Promise((resolveExit) => {
    // A kept-alive socket serves many requests: its listener goes with the wait.
    const socket = req.socket;
    const done = (): void => {
      command.exitWaiters.delete(done);
      socket.off('close', done);
      resolveExit();
    };
    command.exitWaiters.add(done);
    socket.once('close', done);
  });
}

