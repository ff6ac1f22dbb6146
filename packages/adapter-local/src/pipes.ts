import type { ChildProcess } from 'node:child_process';
import { StdinClosed } from '@sandstream/types';
import type { DriverEvents } from '@sandstream/types/runtime';

/** Write errors that mean the command no longer reads its standard input. */
const STDIN_CLOSED_CODES = new Set(['EPIPE', 'ECONNRESET', 'ERR_STREAM_DESTROYED', 'ERR_STREAM_WRITE_AFTER_END']);

/** Quiet polls, once nothing of the command's group is left, after which an open output pipe is given up. */
const QUIET_POLLS = 2;

/**
 * The standard input, output and error pipes of one command's child
 * process, handled alike by the plain and the isolated driver: output is
 * forwarded to the runtime and counted, paused and resumed together;
 * writes to standard input report a reader that went away as
 * `StdinClosed`; and a pipe that a process outside the command's group
 * holds open can be given up once it has stayed quiet.
 */
export class CommandPipes {
  #bytesSeen = 0;
  #bytesAtLastPoll = -1;
  #quietPolls = 0;
  #stdinTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly child: ChildProcess,
    events: DriverEvents,
    reportStderr = true,
  ) {
    child.stdout!.on('data', (data: Buffer) => {
      this.#bytesSeen += data.byteLength;
      events.output('stdout', data);
    });
    // Under a terminal made in the sandbox, stderr is its maker's (`script`), not the command's.
    if (!reportStderr) child.stderr!.resume();
    else {
      child.stderr!.on('data', (data: Buffer) => {
        this.#bytesSeen += data.byteLength;
        events.output('stderr', data);
      });
    }
    // Failures surface through the write callbacks, and a failed read ends
    // its pipe like end-of-file ('close' follows); a listener must exist so
    // that neither becomes an uncaught exception (an EPIPE, say).
    for (const stream of [child.stdin, child.stdout, child.stderr]) stream?.on('error', () => undefined);
  }

  /**
   * Writes to standard input. `stillRead`, when given, is asked while the
   * write waits for room in the pipe: once it says nobody will read any
   * more, the write fails with `StdinClosed` instead of waiting for good.
   */
  write(data: Uint8Array, stillRead?: () => boolean): Promise<void> {
    const stdin = this.child.stdin;
    if (!stdin || stdin.destroyed || stdin.writableEnded) {
      return Promise.reject(new StdinClosed('standard input is closed'));
    }
    return new Promise((resolveWrite, rejectWrite) => {
      let settled = false;
      if (stillRead !== undefined) {
        let delay = 10;
        const watch = (): void => {
          this.#stdinTimer = setTimeout(() => {
            if (settled) return;
            if (!stillRead()) {
              settled = true;
              stdin.destroy();
              rejectWrite(new StdinClosed('the command closed its standard input'));
              return;
            }
            delay = Math.min(delay * 2, 200);
            watch();
          }, delay);
        };
        watch();
      }
      stdin.write(data, (error) => {
        clearTimeout(this.#stdinTimer);
        if (settled) return;
        settled = true;
        if (!error) return resolveWrite();
        const code = (error as NodeJS.ErrnoException).code ?? '';
        rejectWrite(
          STDIN_CLOSED_CODES.has(code)
            ? new StdinClosed(`the command stopped reading standard input (${code})`, { cause: error })
            : error,
        );
      });
    });
  }

  /** Ends standard input; resolves once it is flushed, at once when it is closed already. */
  end(): Promise<void> {
    const stdin = this.child.stdin;
    if (!stdin || stdin.destroyed || stdin.writableEnded) return Promise.resolve();
    return new Promise((resolveEnd) => stdin.end(() => resolveEnd()));
  }

  pause(): void {
    this.child.stdout?.pause();
    this.child.stderr?.pause();
  }

  resume(): void {
    this.child.stdout?.resume();
    this.child.stderr?.resume();
  }

  /**
   * For a poll after the command's group is gone and SIGKILL was sent,
   * while an output pipe is still open: a process that left the group
   * (`setsid`) holds it. Once output has stayed quiet for two such polls,
   * the output pipes are destroyed ('close' follows) and this returns true.
   */
  giveUpWhenQuiet(): boolean {
    if (this.#bytesAtLastPoll === this.#bytesSeen && this.#quietPolls >= QUIET_POLLS) {
      this.child.stdout?.destroy();
      this.child.stderr?.destroy();
      return true;
    }
    this.#quietPolls = this.#bytesAtLastPoll === this.#bytesSeen ? this.#quietPolls + 1 : 0;
    this.#bytesAtLastPoll = this.#bytesSeen;
    return false;
  }

  /** Destroys the three pipes; a write still waiting rejects. */
  destroy(): void {
    clearTimeout(this.#stdinTimer);
    this.child.stdin?.destroy();
    this.child.stdout?.destroy();
    this.child.stderr?.destroy();
  }
}
