// A transport over local processes, standing in for a sandbox: what a
// backend would do, with its requests counted and faults that a test arms.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { StdinClosed, TransportError } from '@sandstream/types';
import { CHANNEL_NAME } from '../src/index.js';
import type { HelperOptions, HelperResult, RemoteTransport, StartRequest, TransportProcess, TransportSink } from '../src/index.js';

/** A backend's terminal: python's pty under the process (spec 1.5), standing in for Docker's Tty or envd's pty. */
const PTY_RELAY = fileURLToPath(new URL('./fixtures/pty-relay.py', import.meta.url));

export interface Counted {
  starts: StartRequest[];
  resizes: [number, number][];
  helpers: string[][];
  signals: string[];
  stdinCloses: number;
}

export interface LocalTransportOptions {
  /** Signals the transport delivers to the supervisor itself (default TERM, as envd). */
  readonly signals?: readonly string[];
  /** Ends the next start with a broken link after the process started (the outcome unknown to the driver). */
  breakNextStart?: boolean;
  /** Ends the stream with a broken link once the command's standard output holds this text and its start was reported (the command runs on). */
  breakOnStdout?: string;
  /** Fails the next N helpers with a transport error before running them. */
  failHelpers?: number;
  /** Fails the next N closes of standard input with a TransportError before closing it (a connect refused). */
  failStdinCloses?: number;
  /**
   * The next start's link breaks at once (the outcome unknown to the driver), and the backend
   * applies the start only once this resolves: a start that begins after the driver gave up.
   * `started` then gets the supervisor's pid.
   */
  lateStart?: { readonly applied: Promise<void>; started?: (pid: number) => void };
  /** Refuses a start of the helper channel before `start()` returns, as a backend may. */
  refuseChannel?: boolean;
  /** Starts a request with `pty` on a terminal (python's pty module), and declares `pty`. */
  readonly pty?: boolean;
}

export function localTransport(options: LocalTransportOptions = {}): RemoteTransport & { counted: Counted; options: LocalTransportOptions } {
  const counted: Counted = { starts: [], resizes: [], helpers: [], signals: [], stdinCloses: 0 };
  return {
    counted,
    options,
    signals: new Set(options.signals ?? ['SIGTERM']),
    ...(options.pty === true ? { pty: true } : {}),
    start(request: StartRequest, sink: TransportSink): TransportProcess {
      counted.starts.push(request);
      const [file, ...args] = request.argv;
      if (options.refuseChannel === true && request.argv[3] === CHANNEL_NAME) {
        sink.end({ kind: 'refused', reason: 'no such user' });
        const none = async (): Promise<void> => undefined;
        return { signal: none, writeStdin: none, closeStdin: none, close: () => undefined };
      }
      const late = options.lateStart;
      if (late !== undefined) {
        delete options.lateStart;
        setImmediate(() => sink.end({ kind: 'broken', error: new Error('socket hang up'), sent: true }));
        void late.applied.then(() => {
          // Nobody reads it: the link that asked for it is gone.
          const child = spawn(file!, args, { env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...request.env }, stdio: 'ignore' });
          late.started?.(child.pid!);
        });
        const none = async (): Promise<void> => undefined;
        return { signal: none, writeStdin: none, closeStdin: none, close: () => undefined };
      }
      const pty = request.pty;
      const child =
        pty === undefined
          ? spawn(file!, args, {
              env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: process.env['HOME'] ?? '/', ...request.env },
              cwd: request.cwd,
              stdio: [request.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
            })
          : spawn('python3', [PTY_RELAY, String(pty.cols), String(pty.rows), file!, ...args], {
              env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: process.env['HOME'] ?? '/', ...request.env },
              cwd: request.cwd,
              stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
            });
      const control = pty === undefined ? undefined : (child.stdio[3] as import('node:net').Socket);
      const acks: (() => void)[] = [];
      control?.on('data', (chunk: Buffer) => {
        for (const _ of chunk.toString().split('\n').slice(0, -1)) acks.shift()?.();
      });
      control?.on('error', () => undefined);
      let ended = false;
      const end: TransportSink['end'] = (e) => {
        if (ended) return;
        ended = true;
        sink.end(e);
      };
      if (options.breakNextStart === true) {
        options.breakNextStart = false;
        // The process runs; the driver only hears that the link broke.
        setImmediate(() => end({ kind: 'broken', error: new Error('connection reset'), sent: true }));
      }
      let stdout = '';
      let stderr = '';
      // The break comes once the mark is out and the supervisor's start report was delivered: the
      // two streams are two pipes, and under load the command's stdout may be read first.
      const breakOnMark = (): void => {
        const mark = options.breakOnStdout;
        if (mark === undefined || !stdout.includes(mark) || !/\x1esandstream:\S+ start /.test(stderr)) return;
        delete options.breakOnStdout;
        end({ kind: 'broken', error: new Error('connection reset'), sent: true });
      };
      child.stdout!.on('data', (chunk: Buffer) => {
        if (ended) return;
        sink.output('stdout', chunk);
        stdout += chunk.toString();
        breakOnMark();
      });
      child.stderr!.on('data', (chunk: Buffer) => {
        if (ended) return;
        sink.output('stderr', chunk);
        if (stderr.length < 4096) stderr += chunk.toString('latin1');
        breakOnMark();
      });
      child.on('error', (error) => end({ kind: 'refused', reason: error.message, error }));
      child.on('close', (code, signal) => end({ kind: 'exit', status: { exitCode: code, signal } }));
      child.stdin?.on('error', () => undefined);
      return {
        async signal(name) {
          counted.signals.push(name);
          if (child.exitCode === null && child.signalCode === null) child.kill(name as NodeJS.Signals);
        },
        async writeStdin(data) {
          if (child.stdin === null || child.stdin.destroyed || child.stdin.writableEnded) throw new StdinClosed('standard input is closed');
          await new Promise<void>((resolve, reject) => child.stdin!.write(data, (error) => (error ? reject(new StdinClosed(error.message)) : resolve())));
        },
        ...(control === undefined
          ? {}
          : {
              resize(cols: number, rows: number): Promise<void> {
                counted.resizes.push([cols, rows]);
                if (child.exitCode !== null || child.signalCode !== null) return Promise.reject(new StdinClosed('the process is gone'));
                return new Promise<void>((resolve) => {
                  acks.push(resolve);
                  control.write(`${cols} ${rows}\n`);
                });
              },
            }),
        async closeStdin() {
          counted.stdinCloses += 1;
          // A terminal's input is never closed (the runtime types end-of-file on it).
          if (pty !== undefined) return;
          if ((options.failStdinCloses ?? 0) > 0) {
            options.failStdinCloses = (options.failStdinCloses ?? 0) - 1;
            throw new TransportError('could not close standard input: connect EMFILE');
          }
          child.stdin?.end();
        },
        pause() {
          child.stdout!.pause();
          child.stderr!.pause();
        },
        resume() {
          child.stdout!.resume();
          child.stderr!.resume();
        },
        close() {
          ended = true;
          child.stdout!.destroy();
          child.stderr!.destroy();
          control?.destroy();
        },
      };
    },
    async run(argv: readonly string[], _options: HelperOptions): Promise<HelperResult> {
      counted.helpers.push([...argv]);
      if ((options.failHelpers ?? 0) > 0) {
        options.failHelpers = (options.failHelpers ?? 0) - 1;
        throw new Error('helper request failed');
      }
      return new Promise((resolve, reject) => {
        const child = spawn(argv[0]!, argv.slice(1), { stdio: 'ignore' });
        child.on('error', reject);
        child.on('close', (exitCode) => resolve({ exitCode }));
      });
    },
  };
}
