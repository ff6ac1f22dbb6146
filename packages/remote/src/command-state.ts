/**
 * What the remote driver and its modes (the terminal's, the followers') share of one command:
 * where its current link stands, and what the runtime was told. The start is settled once, and
 * one result is given once (`exit` or a failure); once either is final, or the driver was let
 * go, nothing more reaches the runtime.
 */
import type { StreamName } from '@sandstream/types';
import type { DriverEvents, ExitStatus, StartedProcess } from '@sandstream/types/runtime';
import { utf8 } from './driver-settings.js';
import type { TransportProcess } from './transport.js';

export class CommandState {
  /** The transport's process read now: the supervisor, or in follow mode the current follower. */
  process: TransportProcess | undefined;
  /** The current link's end was taken in (in follow mode, the next follower opens another). */
  ended = false;
  /** The driver was let go: nothing is read any more. */
  released = false;
  /** The supervisor reported the tree gone. */
  gone = false;
  #events: DriverEvents | undefined;
  #resolveStart: ((started: StartedProcess) => void) | undefined;
  #rejectStart: ((error: Error) => void) | undefined;
  #startSettled = false;
  #done = false;
  /** The first bytes the command showed before its start settled. */
  #startOutput = '';

  /** Takes the runtime's events; returns what the driver's `start` returns. */
  begin(events: DriverEvents): Promise<StartedProcess> {
    this.#events = events;
    return new Promise<StartedProcess>((resolve, reject) => {
      this.#resolveStart = resolve;
      this.#rejectStart = reject;
    });
  }

  /** The start was resolved or rejected. */
  get startSettled(): boolean {
    return this.#startSettled;
  }

  /** The result was given (or taken, {@link take}), or the start failed: nothing more is reported. */
  get done(): boolean {
    return this.#done;
  }

  /** Nothing of the command is read any more: the link's end taken in, the result given, or the driver let go. */
  get finished(): boolean {
    return this.ended || this.#done || this.released;
  }

  /**
   * What the command showed before its start settled (the first bytes of standard error, or of
   * the terminal), for the message of a supervisor that ended without a report (the Engine's
   * refusal, a shell's complaint).
   */
  get startOutput(): string {
    return this.#startOutput;
  }

  /** Keeps the start of `bytes` while the start is not settled (see {@link startOutput}). */
  noteStartOutput(bytes: Uint8Array): void {
    if (!this.#startSettled && this.#startOutput.length < 512) this.#startOutput += utf8.decode(bytes.subarray(0, 512));
  }

  /** The supervisor's `start` report: the command runs, and its pid is its id. */
  started(pid: number): void {
    this.#startSettled = true;
    this.#resolveStart!({ pid, commandId: String(pid) });
  }

  /** The start failed: rejects it, or once it resolved, fails the command. */
  startFailed(error: Error): void {
    if (this.#startSettled) {
      this.fail(error);
      return;
    }
    this.#startSettled = true;
    this.#done = true;
    this.#rejectStart!(error);
  }

  fail(error: Error): void {
    if (this.#done) return;
    this.#done = true;
    this.#events!.fail(error);
  }

  exit(status: ExitStatus): void {
    this.#done = true;
    this.#events!.exit(status);
  }

  /** The command's output, until the result is given. */
  output(stream: StreamName, data: Uint8Array): void {
    if (!this.#done) this.#events!.output(stream, data);
  }

  leaderExited(status: ExitStatus): void {
    this.#events!.leaderExited(status);
  }

  /**
   * Takes the result before it is known (a broken link, whose tree is ended first; a release):
   * nothing else is reported meanwhile, and {@link failTaken} gives it where there is one.
   */
  take(): void {
    this.#done = true;
  }

  failTaken(error: Error): void {
    this.#events!.fail(error);
  }
}
