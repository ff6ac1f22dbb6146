/**
 * The remote driver's follow mode (spec 1.2, ADR-0036): a background command is read through
 * followers of its record, one after another, each started where the last one stopped, so the
 * command does not depend on the driver's connection. A follower ends by itself (exit 0) once
 * the supervisor is gone and every byte was printed, and with 3 when the record is gone; any
 * other end is a broken link, followed again from the bytes already read, as often as the retry
 * policy allows without a byte in between. Failing that, the command runs on: the error carries
 * its id.
 */
import { TransportError, type StreamName } from '@sandstream/types';
import type { CommandHelpers } from './command-helpers.js';
import type { CommandState } from './command-state.js';
import { describeStatus, type FollowMode, type RemoteDriverSettings } from './driver-settings.js';
import { Following } from './following.js';
import { sweepArgv } from './helpers.js';
import { backoffMs } from './retry.js';
import type { TransportEnd } from './transport.js';

/** What the followers hand back to their driver. */
export interface FollowerDriver {
  /** Bytes a follower printed; `hidden`: standard error a follow-only attach does not deliver. */
  output(stream: StreamName, data: Uint8Array, hidden?: boolean): void;
  /** A follower's end that is the command's, as the supervisor's own stream's would be. */
  end(end: TransportEnd): Promise<void>;
  describe(error: unknown): string;
}

/** The followers of one background command's record. */
export class FollowerChain {
  /** What was read so far, and the background start. */
  readonly following: Following;
  readonly #settings: RemoteDriverSettings;
  readonly #id: string;
  readonly #helpers: CommandHelpers;
  readonly #state: CommandState;
  readonly #driver: FollowerDriver;
  /** Followers started again in a row, without a byte between them. */
  #refollows = 0;

  constructor(mode: FollowMode, settings: RemoteDriverSettings, id: string, helpers: CommandHelpers, state: CommandState, driver: FollowerDriver) {
    this.following = new Following(mode);
    this.#settings = settings;
    this.#id = id;
    this.#helpers = helpers;
    this.#state = state;
    this.#driver = driver;
  }

  /** Starts a follower where the last one stopped. */
  follow(): void {
    const following = this.following;
    const state = this.#state;
    if (state.done || state.released) return;
    state.ended = false;
    state.process = this.#settings.transport.start(following.mode.follower(following.offsets()), {
      output: (stream, data) => {
        if (state.ended || state.released) return;
        this.#refollows = 0;
        if (stream === 'stdout') {
          following.stdout(data);
          this.#driver.output('stdout', data);
          return;
        }
        const { hidden, shown } = following.stderr(data);
        if (hidden.byteLength > 0) this.#driver.output('stderr', hidden, true);
        if (shown.byteLength > 0) this.#driver.output('stderr', shown);
      },
      end: (end) => void this.#onEnd(end),
    });
  }

  /** Cuts the current follower's link, as a proxy that drops it would: it is followed again. */
  sever(): void {
    this.#state.process?.close();
    void this.#onEnd({ kind: 'broken', error: new Error('the link was cut'), sent: true });
  }

  /** Ends a follower let go of before it ended, wherever the backend kept it (best effort). */
  sweep(): Promise<void> {
    return this.#helpers.run(sweepArgv(this.#settings.paths.shell, this.following.mode.followerTag)).catch(() => undefined);
  }

  async #onEnd(end: TransportEnd): Promise<void> {
    const state = this.#state;
    if (state.finished) return;
    const status = end.kind === 'exit' ? end.status?.exitCode : undefined;
    if ((end.kind === 'exit' && (status === undefined || status === 0)) || state.gone) {
      await this.#driver.end(end);
      return;
    }
    state.ended = true;
    state.process?.close();
    const policy = this.#settings.retry;
    if (status !== 3 && this.#refollows < policy.attempts) {
      await new Promise((resolve) => setTimeout(resolve, backoffMs(policy, this.#refollows++)).unref());
      // The old follower may still print where the backend kept it: swept first.
      if (end.kind === 'broken') await this.sweep();
      this.follow();
      return;
    }
    const why = status === 3 ? 'its record is gone' : end.kind === 'broken' ? this.#driver.describe(end.error) : end.kind === 'refused' ? end.reason : `the follower ended with ${describeStatus(end.status)}`;
    const error = new TransportError(`the link to background command ${this.#id} broke (${why}); it may run on: attach again to read it`, { commandId: this.#id });
    if (!state.startSettled) state.startFailed(error);
    else state.fail(error);
  }
}
