/**
 * The backend: a small HTTP daemon that runs commands as local processes,
 * each leading its own process group, and streams their output. It stands
 * in for the agent a remote sandbox runs; the protocol is in protocol.ts.
 *
 * Run it as `node dist/daemon.js`: it listens on 127.0.0.1, on a port the
 * system picks, and prints `listening <port>` once ready. It shuts down on
 * SIGTERM, SIGINT or when its standard input ends (its parent is gone),
 * killing every command it still runs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { constants } from 'node:os';
import { isRunningState, someProcess } from '@sandstream/types/runtime';
import type { CommandEvent, StartRequest } from './protocol.js';

interface Command {
  readonly child: ChildProcess;
  /** The command leads its own group, so the group id is its pid. */
  readonly pgid: number;
  /** Set once no live process of the group is left: its id may be reused. */
  groupGone: boolean;
}

const commands = new Map<string, Command>();
let counter = 0;

// #region group
/**
 * True while a live process is in the group. `kill(-pgid, 0)` counts
 * zombies too, and an orphan whose new parent never reaps it stays a zombie
 * for good; where /proc exists, a group of zombies counts as gone.
 */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
  // Where /proc cannot be listed, kill()'s word stands; a process that exits while it is read is skipped.
  return someProcess((entry) => entry.pgrp === pgid && isRunningState(entry.state)) ?? true;
}

function signalGroup(command: Command, signal: NodeJS.Signals): void {
  if (command.groupGone) return;
  try {
    process.kill(-command.pgid, signal); // a negative pid addresses the group
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

function killQuietly(command: Command): void {
  try {
    signalGroup(command, 'SIGKILL');
  } catch {
    // Not ours to kill (EPERM): nothing more this daemon can do.
  }
}

/** Resolves once the group is gone, polling from 1 ms up to every 50 ms. */
async function groupGone(command: Command): Promise<void> {
  for (let delay = 1; groupAlive(command.pgid); delay = Math.min(delay * 2, 50)) {
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
  command.groupGone = true;
}
// #endregion group

// #region start
function startCommand(request: StartRequest, response: ServerResponse): void {
  response.writeHead(200, { 'content-type': 'application/x-ndjson' });
  const send = (event: CommandEvent): boolean => response.write(`${JSON.stringify(event)}\n`);
  const [file, ...args] = request.argv;
  let child: ChildProcess;
  try {
    child = spawn(file!, args, {
      ...(request.cwd === undefined ? {} : { cwd: request.cwd }),
      env: { ...process.env, ...request.env },
      stdio: [request.stdin, 'pipe', 'pipe'],
      detached: true, // a new process group, led by the command
    });
  } catch (error) {
    send({ type: 'spawn-failed', message: (error as Error).message });
    response.end();
    return;
  }
  child.once('error', (error) => {
    if (child.pid !== undefined) return;
    send({ type: 'spawn-failed', message: error.message });
    response.end();
  });
  child.once('spawn', () => {
    const id = String(++counter);
    const command: Command = { child, pgid: child.pid!, groupGone: false };
    commands.set(id, command);
    send({ type: 'started', id, pid: child.pid! });

    // Flow control: when the client reads slowly, stop reading the pipes.
    let draining = false;
    const forward = (stream: 'stdout' | 'stderr') => (data: Buffer) => {
      if (send({ type: 'output', stream, data: data.toString('base64') }) || draining) return;
      draining = true;
      child.stdout!.pause();
      child.stderr!.pause();
      response.once('drain', () => {
        draining = false;
        child.stdout!.resume();
        child.stderr!.resume();
      });
    };
    child.stdout!.on('data', forward('stdout'));
    child.stderr!.on('data', forward('stderr'));
    child.stdin?.on('error', () => undefined); // reported through the write callbacks

    // The leader was reaped; what it started may live on.
    child.once('exit', (exitCode, signal) => send({ type: 'leader-exited', exitCode, signal }));
    // Both pipes are closed too: once the group is empty, the command is over.
    child.once('close', (exitCode, signal) => {
      void groupGone(command).then(() => {
        send({ type: 'exit', exitCode, signal });
        response.end();
      });
    });
    // A client that hangs up before the end can never learn the result.
    response.once('close', () => {
      if (!response.writableFinished) killQuietly(command);
    });
  });
}
// #endregion start

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of request) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

const STDIN_CLOSED = new Set(['EPIPE', 'ECONNRESET', 'ERR_STREAM_DESTROYED', 'ERR_STREAM_WRITE_AFTER_END']);

function writeStdin(command: Command, data: Buffer): Promise<number> {
  const stdin = command.child.stdin;
  if (!stdin || stdin.destroyed || stdin.writableEnded) return Promise.resolve(409);
  return new Promise((resolve) => {
    stdin.write(data, (error) => {
      if (!error) resolve(204);
      else resolve(STDIN_CLOSED.has((error as NodeJS.ErrnoException).code ?? '') ? 409 : 500);
    });
  });
}

async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
  const url = new URL(request.url ?? '/', 'http://daemon');
  const [, collection, id, action, detail] = url.pathname.split('/');
  if (collection !== 'commands') return void response.writeHead(404).end();
  const body = await readBody(request);
  if (id === undefined && request.method === 'POST') {
    return startCommand(JSON.parse(body.toString('utf8')) as StartRequest, response);
  }
  const command = commands.get(id ?? '');
  if (request.method === 'DELETE' && action === undefined) {
    // Released: nothing of it may outlive this (the client may have given up on it).
    if (command !== undefined) killQuietly(command);
    commands.delete(id ?? '');
    return void response.writeHead(204).end();
  }
  if (command === undefined) return void response.writeHead(404).end();
  if (action === 'signal') {
    const { signal } = JSON.parse(body.toString('utf8')) as { signal: NodeJS.Signals };
    if (!(signal in constants.signals)) return void response.writeHead(400).end();
    signalGroup(command, signal);
    return void response.writeHead(204).end();
  }
  if (action === 'stdin' && detail === undefined) {
    return void response.writeHead(await writeStdin(command, body)).end();
  }
  if (action === 'stdin' && detail === 'end') {
    command.child.stdin?.end();
    return void response.writeHead(204).end();
  }
  response.writeHead(404).end();
}

const server = createServer((request, response) => {
  handle(request, response).catch((error: unknown) => {
    if (!response.headersSent) response.writeHead(500);
    response.end(String(error));
  });
});

function shutdown(): void {
  for (const command of commands.values()) killQuietly(command);
  server.close();
  server.closeAllConnections();
  process.exit(0);
}

process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
process.stdin.on('end', shutdown).resume();

server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('not listening on a TCP port');
  process.stdout.write(`listening ${address.port}\n`);
});
