/**
 * The remote driver's terminal mode (spec 1.5, ADR-0052): a command with `pty`, over a transport
 * that declares `pty`. The supervisor is started on a terminal of the command's size, and every
 * byte of the terminal is `stdout`. Its reports go to a record directory, which a
 * `sandstream-follower` started beside it reads (its standard error carries them, its first line
 * of standard output the supervisor's pid); the result waits for both the terminal stream's end
 * and the follower's. Where the transport cannot signal the supervisor, the driver sends a signal
 * other than SIGKILL to the supervisor's pid ({@link TerminalMode.supervisor}) through a helper,
 * and it forwards it to the terminal's whole session. `resize` goes through the transport.
 */
import type { CommandSpec } from '@sandstream/types/runtime';
import { DEFAULT_RECORD_BASE, followerArgv } from './background.js';
import type { CommandHelpers } from './command-helpers.js';
import type { CommandState } from './command-state.js';
import { describeStatus, utf8, type RemoteDriverSettings } from './driver-settings.js';
import { sweepArgv } from './helpers.js';
import { launchRequest } from './launch.js';
import { TAG_VARIABLE, type SupervisorLease } from './supervisor.js';
import type { TransportEnd, TransportProcess } from './transport.js';

/** What terminal mode hands back to its driver. */
export interface TerminalDriver {
  /** Bytes of the follower's standard error: nothing but the supervisor's report frames. */
  reports(data: Uint8Array): void;
  /** Closes the command's streams, the follower's among them ({@link TerminalMode.closeFollower}). */
  closeLinks(): void;
  /** The end of the terminal's stream, every report in: the command's end, as in any mode. */
  end(end: TransportEnd): Promise<void>;
  /** A link broke, or the reports cannot be read: what became of the command is unknown. */
  broken(error: unknown, sent: boolean): Promise<void>;
}

/** The supervisor's pid and start time, from the follower's first line. */
export interface SupervisorProcess {
  readonly pid: number;
  readonly startTime: string;
}

/** One command on a terminal: its two streams, and how each ended. */
export class TerminalMode {
  readonly #settings: RemoteDriverSettings;
  readonly #command: CommandSpec;
  readonly #id: string;
  readonly #helpers: CommandHelpers;
  readonly #state: CommandState;
  readonly #driver: TerminalDriver;
  /** The directory the supervisor writes its reports to. */
  readonly #record: string;
  /** The follower's tag, `<id>-reports` (see {@link startFollower}). */
  readonly #followerTag: string;
  /** The follower of the record. */
  #follower: TransportProcess | undefined;
  #streamEnd: TransportEnd | undefined;
  #reportsEnd: TransportEnd | undefined;
  /** The follower's first line so far. */
  #pidLine = '';
  #supervisor: SupervisorProcess | undefined;
  /** A bound on the wait for a record after the terminal ended without a start report. */
  #startWait: NodeJS.Timeout | undefined;

  constructor(settings: RemoteDriverSettings, command: CommandSpec, id: string, helpers: CommandHelpers, state: CommandState, driver: TerminalDriver) {
    this.#settings = settings;
    this.#command = command;
    this.#id = id;
    this.#helpers = helpers;
    this.#state = state;
    this.#driver = driver;
    this.#record = `${settings.recordBase ?? DEFAULT_RECORD_BASE}tty-${id}`;
    this.#followerTag = `${id}-reports`;
  }

  /** The supervisor's pid and start time, once the follower printed them. */
  get supervisor(): SupervisorProcess | undefined {
    return this.#supervisor;
  }

  /** Starts the supervisor on a terminal of the command's size, its reports going to the record. */
  startSupervisor(lease: SupervisorLease | undefined): TransportProcess {
    const request = launchRequest(this.#id, this.#command, this.#settings, lease, { record: this.#record, size: this.#command.pty });
    return this.#settings.transport.start(request, {
      output: (_stream, data) => this.#onOutput(data),
      end: (end) => {
        this.#streamEnd ??= end;
        void this.#onEnd();
      },
    });
  }

  /**
   * Starts the follower of the record, beside the supervisor. It is tagged `<id>-reports`: the
   * tree's kill (the tag `<id>` exactly) leaves it to print `gone`; an abandoned start's sweep
   * (the tag's prefix) and the close-time sweep end it.
   */
  startFollower(): void {
    const { transport, paths, requestTimeoutMs } = this.#settings;
    // Bounded: a supervisor that never made its record (its start refused) leaves it waiting.
    const waitMs = Math.max(2 * requestTimeoutMs, 30_000);
    const tag = this.#followerTag;
    this.#follower = transport.start(
      { argv: followerArgv(paths.shell, this.#record, this.#id, { stdout: 0, stderr: 0 }, waitMs), env: { [TAG_VARIABLE]: tag }, cwd: '/', user: this.#command.user, stdin: false, id: tag },
      {
        output: (stream, data) => {
          if (stream === 'stderr') this.#driver.reports(data);
          else this.#onSupervisorLine(data);
        },
        end: (end) => {
          this.#reportsEnd ??= end;
          void this.#onEnd();
        },
      },
    );
  }

  closeFollower(): void {
    this.#follower?.close();
  }

  /** Stops the bounded wait for a record, if one is under way (the driver was let go). */
  stopWaiting(): void {
    if (this.#startWait !== undefined) clearTimeout(this.#startWait);
  }

  /** Bytes the terminal showed: all of them the command's `stdout`. */
  #onOutput(data: Uint8Array): void {
    const state = this.#state;
    if (state.ended || state.released) return;
    // For the message of a start that failed (the Engine's refusal).
    state.noteStartOutput(data);
    state.output('stdout', data);
  }

  /** The follower's first line of standard output: the supervisor's `PID START`. */
  #onSupervisorLine(data: Uint8Array): void {
    if (this.#supervisor !== undefined || this.#pidLine.length > 64) return;
    this.#pidLine += utf8.decode(data);
    const match = /^(\d+) (\d+)\n/.exec(this.#pidLine);
    if (match !== null) this.#supervisor = { pid: Number(match[1]), startTime: match[2]! };
  }

  /**
   * One of the two streams ended. A broken one is a broken link; a refused start runs nothing.
   * Otherwise the end waits for both: the terminal's, so that every byte is in, and the
   * follower's, so that every report is (it ends by itself once the supervisor is gone).
   */
  async #onEnd(): Promise<void> {
    const state = this.#state;
    if (state.finished) return;
    const streamEnd = this.#streamEnd;
    const reportsEnd = this.#reportsEnd;
    const broken = streamEnd?.kind === 'broken' ? streamEnd : reportsEnd?.kind === 'broken' ? reportsEnd : undefined;
    if (broken !== undefined) {
      state.ended = true;
      this.#driver.closeLinks();
      await this.#driver.broken(broken.error, broken.sent);
      return;
    }
    if (streamEnd?.kind === 'refused') {
      this.#driver.closeLinks();
      this.#sweepFollower();
      await this.#driver.end(streamEnd);
      return;
    }
    // A follower refused (an account the backend does not know) beside a start not reported yet:
    // the supervisor's own start says what became of the command.
    if (reportsEnd?.kind === 'refused' && streamEnd === undefined && !state.startSettled) return;
    if (reportsEnd !== undefined && !(reportsEnd.kind === 'exit' && reportsEnd.status?.exitCode === 0)) {
      // The follower could not read the record: no report can come any more.
      const why = reportsEnd.kind === 'refused' ? reportsEnd.reason : reportsEnd.kind === 'exit' && reportsEnd.status?.exitCode === 3 ? 'the supervisor made no record' : `the follower of its record ended with ${describeStatus(reportsEnd.kind === 'exit' ? reportsEnd.status : undefined)}`;
      if (!state.startSettled && streamEnd !== undefined) {
        this.#driver.closeLinks();
        await this.#driver.end(streamEnd);
        return;
      }
      state.ended = true;
      this.#driver.closeLinks();
      await this.#driver.broken(new Error(`the reports of command ${this.#id} could not be read: ${why}`), true);
      return;
    }
    if (streamEnd !== undefined && reportsEnd === undefined && !state.startSettled) {
      // The supervisor ended and nothing reported its start: a record it made is read by now, and
      // one it never made is not waited for long.
      this.#startWait ??= setTimeout(() => {
        this.#reportsEnd ??= { kind: 'exit', status: { exitCode: 3, signal: null } };
        this.#sweepFollower();
        void this.#onEnd();
      }, this.#settings.requestTimeoutMs).unref();
      return;
    }
    if (streamEnd === undefined || reportsEnd === undefined) return;
    this.stopWaiting();
    await this.#driver.end(streamEnd);
  }

  /** Ends the follower wherever the backend still runs it (best effort). */
  #sweepFollower(): void {
    void this.#helpers.run(sweepArgv(this.#settings.paths.shell, this.#followerTag)).catch(() => undefined);
  }
}
