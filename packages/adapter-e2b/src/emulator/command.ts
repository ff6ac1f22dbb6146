/**
 * One command of the envd emulator: the real local process, its output fanned
 * out to each stream that follows it (with envd's back pressure), its stdin,
 * its signals and its end event.
 */
import type { ChildProcess } from 'node:child_process';
import { readSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { processState, type ProcessEntry } from '@sandstream/remote/emulator';
import { ProcessEvent_EndEventSchema, type ProcessEvent } from '../gen/envd-process_pb.js';
import { endFields, type EndFields } from '../status.js';
import type { Terminal } from './terminal.js';
import type { EmulatedProcess } from './types.js';

/**
 * Live members of the session a terminal command leads (its shell's jobs
 * each lead a group of their own), only while that session is still the
 * command's: none once its pid belongs to a process that started at
 * another time, and only members that started no sooner than the leader.
 */
export function ownSessionMembers(command: Command, live: readonly ProcessEntry[]): number[] {
  const since = command.leaderStartTicks;
  if (command.pty === undefined || since === undefined) return [];
  const holder = processState(command.pid);
  if (holder !== undefined && holder.startTicks !== since) return [];
  return live.filter((entry) => entry.session === command.pid && entry.startTicks >= since).map((entry) => entry.pid);
}

/** An unbounded queue of events with one waiting reader. */
export class Subscription {
  private readonly items: ProcessEvent[] = [];
  private waiter: (() => void) | undefined;
  closed = false;

  constructor(private readonly onDrained: () => void) {}

  get length(): number {
    return this.items.length;
  }

  push(event: ProcessEvent): void {
    this.items.push(event);
    this.wake();
  }

  close(): void {
    this.closed = true;
    this.wake();
  }

  private wake(): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.();
  }

  /** The next event, `undefined` at the end, `'timeout'` after `ms`, `'aborted'` when `signal` fires. */
  async next(ms: number, signal: AbortSignal): Promise<ProcessEvent | undefined | 'timeout' | 'aborted'> {
    for (;;) {
      const item = this.items.shift();
      if (item !== undefined) {
        if (this.items.length < LOW_WATER) this.onDrained();
        return item;
      }
      if (this.closed) return undefined;
      if (signal.aborted) return 'aborted';
      const outcome = await new Promise<'wake' | 'timeout' | 'aborted'>((resolveWait) => {
        const timer = setTimeout(() => finish('timeout'), ms);
        const onAbort = (): void => finish('aborted');
        signal.addEventListener('abort', onAbort, { once: true });
        const finish = (value: 'wake' | 'timeout' | 'aborted'): void => {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          this.waiter = undefined;
          resolveWait(value);
        };
        this.waiter = () => finish('wake');
      });
      if (outcome !== 'wake') return outcome;
    }
  }
}

/** Events queued for one subscriber at which the command's pipes are paused, as envd's bounded channels do. */
const HIGH_WATER = 64;
const LOW_WATER = 16;
/** The most one data event carries: envd reads each pipe 32 KiB at a time (handler.go, `stdChunkSize`)... */
const CHUNK_BYTES = 32 * 1024;
/** ...and a terminal's master 16 KiB at a time (`ptyChunkSize`). */
const PTY_CHUNK_BYTES = 16 * 1024;

export class Command implements EmulatedProcess {
  readonly startedAt = Date.now();
  end: EndFields | undefined;
  endedAt: number | undefined;
  readonly signals: string[] = [];
  sandboxId: string | undefined;
  user: string | undefined;
  /** The leader's start time in clock ticks since boot, when it could be read. */
  leaderStartTicks: number | undefined;
  readonly subscribers = new Set<Subscription>();
  stdinOpen: boolean;
  private paused = false;
  private deadline: NodeJS.Timeout | undefined;
  /** How the leader ended, once it was reaped (the end event may come later). */
  private exited: EndFields | undefined;
  /** A SIGTERM or SIGKILL was sent: the pipes close once the leader is reaped. */
  private cancelled = false;

  constructor(
    readonly child: ChildProcess,
    readonly pid: number,
    readonly config: EmulatedProcess['config'],
    readonly tag: string | undefined,
    readonly stdin: boolean,
    private readonly onEnded: (command: Command) => void,
    /** The command's pseudo-terminal, when it was started with `pty`: its only output and input. */
    private readonly terminal?: Terminal,
  ) {
    this.stdinOpen = stdin;
    child.stdin?.on('error', () => undefined);
    child.stdout?.on('data', (data: Buffer) => this.publishData('stdout', data));
    child.stderr?.on('data', (data: Buffer) => this.publishData('stderr', data));
    child.stdout?.on('error', () => undefined);
    child.stderr?.on('error', () => undefined);
    terminal?.output.on('data', (data: Buffer) => this.publishData('pty', data));
    child.once('exit', (code, signal) => this.reaped(code, signal));
  }

  /** The terminal's size (the last one set), for a command started with `pty`. */
  get pty(): { readonly cols: number; readonly rows: number } | undefined {
    return this.terminal?.size;
  }

  /** What the command's output is read from: its two pipes, or its terminal's master. */
  private outputs(): Readable[] {
    if (this.terminal !== undefined) return [this.terminal.output];
    return [this.child.stdout, this.child.stderr].filter((pipe): pipe is Readable => pipe !== null);
  }

  /** envd kills the leader when the Start request's Connect-Timeout-Ms elapses, not when the client goes away. */
  killAfter(ms: number): void {
    this.deadline = setTimeout(() => this.signal('SIGKILL'), ms);
  }

  subscribe(): Subscription {
    const subscription = new Subscription(() => this.maybeResume());
    this.subscribers.add(subscription);
    return subscription;
  }

  unsubscribe(subscription: Subscription): void {
    this.subscribers.delete(subscription);
    this.maybeResume();
  }

  /**
   * SendSignal: to the leader only (its children are not told). Either
   * signal also stops envd waiting for the pipes' end of file: the stream
   * ends once the leader is reaped (at once when it already was).
   */
  signal(signal: 'SIGTERM' | 'SIGKILL'): void {
    this.signals.push(signal);
    this.cancelled = true;
    if (this.exited !== undefined) {
      // envd's leader is a zombie until the pipes close, so its pid is still
      // its own; here Node.js reaped it and the number may be another's.
      this.finish();
      return;
    }
    try {
      process.kill(this.pid, signal);
    } catch {
      // Reaped meanwhile.
    }
  }

  /** Writes to the command's stdin as envd's SendInput does; throws envd's error when it cannot. */
  async write(bytes: Uint8Array): Promise<void> {
    if (this.terminal !== undefined) {
      throw new ConnectError('error writing to stdin: tty assigned to process — input should be written to the pty, not the stdin', Code.Internal);
    }
    const stdin = this.child.stdin;
    if (!this.stdinOpen || stdin === null || stdin.destroyed || stdin.writableEnded) {
      throw new ConnectError('error writing to stdin: stdin not enabled or closed', Code.Internal);
    }
    await new Promise<void>((resolveWrite, rejectWrite) => {
      stdin.write(bytes, (error) => {
        if (error) rejectWrite(new ConnectError(`error writing to stdin: error writing to stdin of process '${this.pid}': ${error.message}`, Code.Internal));
        else resolveWrite();
      });
    });
  }

  /**
   * Writes to the command's terminal as envd's SendInput (and StreamInput) does with `pty`
   * bytes: every byte, held back while the terminal's input queue is full.
   */
  async writePty(bytes: Uint8Array): Promise<void> {
    if (this.terminal === undefined) {
      throw new ConnectError('error writing to tty: tty not assigned to process — input should be written to the stdin, not the tty', Code.Internal);
    }
    try {
      await this.terminal.write(bytes);
    } catch (error) {
      throw new ConnectError(`error writing to tty: error writing to tty of process '${this.pid}': ${(error as Error).message}`, Code.Internal);
    }
  }

  /** Update's new size: TIOCSWINSZ on the terminal, which sends SIGWINCH to its foreground group. */
  resize(cols: number, rows: number): void {
    if (this.terminal === undefined) throw new ConnectError('error resizing tty: tty not assigned to process', Code.Internal);
    try {
      this.terminal.resize(cols, rows);
    } catch (error) {
      throw new ConnectError(`error resizing tty: ${(error as Error).message}`, Code.Internal);
    }
  }

  /** Closes stdin (envd answers success when it is closed already, or was never open; a terminal's input is never closed). */
  async closeStdin(): Promise<void> {
    if (this.terminal !== undefined) {
      throw new ConnectError('error closing stdin: cannot close stdin for PTY process — send Ctrl+D (0x04) instead', Code.Unknown);
    }
    const stdin = this.child.stdin;
    this.stdinOpen = false;
    if (stdin !== null && !stdin.destroyed && !stdin.writableEnded) {
      await new Promise<void>((resolveEnd) => stdin.end(() => resolveEnd()));
    }
  }

  /** Data events of at most {@link CHUNK_BYTES} each ({@link PTY_CHUNK_BYTES} from a terminal), as envd reads. */
  private publishData(stream: 'stdout' | 'stderr' | 'pty', data: Buffer): void {
    let full = false;
    const chunk = stream === 'pty' ? PTY_CHUNK_BYTES : CHUNK_BYTES;
    for (let offset = 0; offset < data.byteLength; offset += chunk) {
      const event: ProcessEvent = {
        $typeName: 'process.ProcessEvent',
        event: {
          case: 'data',
          value: { $typeName: 'process.ProcessEvent.DataEvent', output: { case: stream, value: new Uint8Array(data.subarray(offset, offset + chunk)) } },
        },
      };
      for (const subscriber of this.subscribers) {
        subscriber.push(event);
        if (subscriber.length >= HIGH_WATER) full = true;
      }
    }
    if (full && !this.paused) {
      this.paused = true;
      for (const output of this.outputs()) output.pause();
    }
  }

  private maybeResume(): void {
    if (!this.paused) return;
    for (const subscriber of this.subscribers) if (subscriber.length >= LOW_WATER) return;
    this.paused = false;
    for (const output of this.outputs()) output.resume();
  }

  /**
   * Publishes what is left of a pipe before it is closed: what Node.js has
   * read but not yet emitted, then what is still in the pipe itself. envd
   * reads its pipes on threads of their own, so what a command wrote before
   * its end always reaches the client. This loop, busy with other commands,
   * could reach the end of the drain window before it had read the pipe
   * again, and closing it then dropped the command's last output (the soak:
   * stdout short by 219 061 bytes and stderr empty, with the right status).
   */
  private takeRest(pipe: Readable | null, stream: 'stdout' | 'stderr'): void {
    if (pipe === null || pipe.destroyed) return;
    // read() emits 'data' for what it returns, which publishes it.
    while (pipe.read() !== null);
    // The descriptor of Node.js's pipe handle: non-blocking, so an empty pipe answers EAGAIN.
    const fd = (pipe as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
    if (typeof fd !== 'number' || fd < 0) return;
    const buffer = Buffer.allocUnsafe(64 * 1024);
    for (;;) {
      let length: number;
      try {
        length = readSync(fd, buffer, 0, buffer.length, null);
      } catch {
        return;
      }
      if (length <= 0) return;
      this.publishData(stream, Buffer.from(buffer.subarray(0, length)));
    }
  }

  /**
   * The leader was reaped. envd (`handler.go`, `Wait`) sends the end event
   * once both output pipes reached end of file, however long a process
   * that inherited them keeps them open, so a command that leaves one
   * behind streams on after its leader's end, and ends only when it does.
   * A SIGTERM or SIGKILL through SendSignal, or the Start's deadline,
   * cancels that wait (`outCancel`): the pipes are then closed as soon as
   * the leader is reaped, and what a survivor writes later is lost.
   * A terminal is the same with its master for the pipes: envd's reader
   * ends at the master's end of file (EIO), once no process has the
   * terminal open any more (the leader's jobs included).
   */
  private reaped(code: number | null, signal: NodeJS.Signals | null): void {
    clearTimeout(this.deadline);
    this.stdinOpen = false;
    this.exited = endFields(code, signal);
    if (this.paused) {
      // Not envd's back pressure any more: what is left must reach its end of file.
      this.paused = false;
      for (const output of this.outputs()) output.resume();
    }
    if (this.cancelled) return this.finish();
    let open = 0;
    for (const pipe of this.outputs()) {
      if (pipe.readableEnded || pipe.destroyed) continue;
      open++;
      pipe.once('close', () => {
        if (--open === 0) this.finish();
      });
    }
    if (open === 0) this.finish();
  }

  /** Closes the pipes (what is in them taken first) and sends the end event; once. */
  private finish(): void {
    const fields = this.exited;
    if (fields === undefined || this.end !== undefined) return;
    const { stdout, stderr } = this.child;
    this.takeRest(stdout, 'stdout');
    this.takeRest(stderr, 'stderr');
    stdout?.destroy();
    stderr?.destroy();
    this.child.stdin?.destroy();
    // envd closes the master after the leader's end: what still holds the terminal is hung up.
    this.terminal?.takeRest();
    this.terminal?.close();
    this.maybeResume();
    this.end = fields;
    this.endedAt = Date.now();
    const event: ProcessEvent = {
      $typeName: 'process.ProcessEvent',
      event: {
        case: 'end',
        value: create(ProcessEvent_EndEventSchema, {
          exitCode: fields.exitCode,
          exited: fields.exited,
          status: fields.status,
          ...(fields.error === undefined ? {} : { error: fields.error }),
        }),
      },
    };
    for (const subscriber of this.subscribers) {
      subscriber.push(event);
      subscriber.close();
    }
    this.onEnded(this);
  }
}
