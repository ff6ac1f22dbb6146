/**
 * The helper commands of one remote command (ADR-0033): each run in the
 * sandbox as the command's own account and bounded by the request timeout,
 * repeated within the retry policy where it must take effect, and the kill
 * of the command's tree, one under way at a time, which whoever needs the
 * tree gone can await (the runtime's SIGKILL, a broken link, a release).
 */
import { StdinClosed, TransportError } from '@sandstream/types';
import type { CommandSpec } from '@sandstream/types/runtime';
import type { RemoteDriverSettings } from './driver-settings.js';
import { abandonArgv, groupSignalArgv, processSignalArgv, recordResizeArgv, recordSignalArgv, sweepArgv, treeKillArgv } from './helpers.js';
import type { StartReport } from './reports.js';
import { retry } from './retry.js';

/** The helper commands of the command tagged `id`. */
export class CommandHelpers {
  readonly #settings: RemoteDriverSettings;
  readonly #command: CommandSpec;
  readonly #id: string;
  /** A kill of the tree under way (the runtime's SIGKILL, or one after a broken link). */
  #killing: Promise<void> | undefined;

  constructor(settings: RemoteDriverSettings, command: CommandSpec, id: string) {
    this.#settings = settings;
    this.#command = command;
    this.#id = id;
  }

  /** The kill of the tree under way, if any. */
  get killing(): Promise<void> | undefined {
    return this.#killing;
  }

  /** Runs a helper command as the command's account; a helper that fails is an error (to repeat). */
  async run(argv: string[]): Promise<void> {
    const { exitCode } = await this.#settings.transport.run(argv, { user: this.#command.user, timeoutMs: this.#settings.requestTimeoutMs });
    if (exitCode !== 0) throw new Error(`the helper ${argv[4] ?? ''} ended with ${exitCode === null ? 'a signal' : `exit status ${exitCode}`}`);
  }

  /**
   * One signal to the supervisor of a command on a terminal (spec 1.5), which forwards it to the
   * terminal's whole session: the process the follower of its record named, or for a background
   * command, the one its record (a directory) names.
   */
  signalSupervisor(signal: string, supervisor: string | { readonly pid: number; readonly startTime: string }): Promise<void> {
    const { shell } = this.#settings.paths;
    const name = signal.replace(/^SIG/, '');
    return this.run(typeof supervisor === 'string' ? recordSignalArgv(shell, name, supervisor) : processSignalArgv(shell, name, supervisor.pid, supervisor.startTime));
  }

  /**
   * The terminal of a background command (spec 1.5), whose record is `record`, set to `cols` by
   * `rows` in the sandbox; `StdinClosed` once its supervisor is gone.
   */
  async resizeInRecord(record: string, cols: number, rows: number): Promise<void> {
    const argv = recordResizeArgv(this.#settings.paths.shell, record, cols, rows);
    const { exitCode } = await this.#settings.transport.run(argv, { user: this.#command.user, timeoutMs: this.#settings.requestTimeoutMs });
    if (exitCode === 3) throw new StdinClosed('the command has ended; its terminal is gone');
    if (exitCode !== 0) throw new TransportError(`the terminal of background command ${this.#id} could not be resized: the helper ended with ${exitCode === null ? 'a signal' : `exit status ${exitCode}`}`);
  }

  /** Repeats `attempt` while it fails, within the retry policy (its deadline the request timeout unless the policy sets one). */
  repeat(attempt: () => Promise<void>): Promise<void> {
    return retry({ ...this.#settings.retry, deadlineMs: this.#settings.retry.deadlineMs ?? this.#settings.requestTimeoutMs }, attempt);
  }

  /**
   * SIGKILL to the group, guarded by the start time, then to everything tagged; repeated while it
   * fails. Without the command's `identity` (its start not reported), the start is abandoned by its tag.
   */
  killTree(identity: StartReport | undefined): Promise<void> {
    const shell = this.#settings.paths.shell;
    const argv = identity === undefined ? abandonArgv(shell, this.#id) : treeKillArgv(shell, identity, this.#id);
    return this.#track(this.repeat(() => this.run(argv)));
  }

  /**
   * SIGKILL to the command's holder (tagged `<id>-holder`), repeated while it fails: what only the
   * supervisor ends, once the supervisor itself is gone (killed by the runtime, or by an OOM kill).
   * Left, the holder would run on until the sandbox is closed.
   */
  sweepHolder(): Promise<void> {
    const argv = sweepArgv(this.#settings.paths.shell, `${this.#id}-holder`);
    return this.repeat(() => this.run(argv));
  }

  /** One signal to the command's group, guarded by its start time (`signal` with its `SIG`). */
  signalGroup(identity: StartReport, signal: string): Promise<void> {
    return this.run(groupSignalArgv(this.#settings.paths.shell, signal.replace(/^SIG/, ''), identity));
  }

  /**
   * The termination sequence of spec 9.8, run from here for a command whose link broke (spec 1.4,
   * the owner-loss rule): SIGTERM and SIGCONT to its group, the grace period, then
   * {@link killTree}. A signal that cannot be delivered does not hold up the kill.
   */
  terminateTree(identity: StartReport | undefined): Promise<void> {
    const graceMs = this.#settings.graceMs ?? 0;
    if (identity === undefined || graceMs <= 0) return this.killTree(identity);
    const shell = this.#settings.paths.shell;
    const terminating = (async () => {
      try {
        await this.signalGroup(identity, 'SIGTERM');
        await this.signalGroup(identity, 'SIGCONT');
        await new Promise((resolve) => setTimeout(resolve, graceMs));
      } catch {
        // The kill below is what must take effect.
      }
      const argv = treeKillArgv(shell, identity, this.#id);
      await this.repeat(() => this.run(argv));
    })();
    return this.#track(terminating);
  }

  /** Makes `killing` the kill under way, until it fails. */
  #track(killing: Promise<void>): Promise<void> {
    this.#killing = killing;
    killing.then(
      () => undefined,
      // A failed kill may be tried again by the next caller.
      () => {
        if (this.#killing === killing) this.#killing = undefined;
      },
    );
    return killing;
  }
}
