/**
 * The remote driver: a `ProcessDriver` over any {@link RemoteTransport}
 * (ADR-0033). It starts the supervisor in place of the command, takes the
 * command's identity, exact exit and the tree's end from the supervisor's
 * reports, and turns the transport's own end into a result only where the
 * reports cannot.
 *
 * - `start` resolves on the `start` report (the command's pid is its
 *   `commandId`); `noexec` is `SpawnFailed`; a transport that ends without
 *   a report is `SpawnFailed` when the backend gave an end (nothing runs),
 *   `TransportError` when the link broke (the command is swept by its tag
 *   first, and the start is never repeated).
 * - `exit` then `gone` is the driver's `exit`, once the transport's end
 *   says every byte is in. `exit` then `held` (members outlived the leader)
 *   is `leaderExited` (ADR-0014): the runtime winds the tree down.
 * - Signals go to the supervisor through the transport where the backend
 *   can deliver them (it forwards them to the group and the session), else
 *   as a helper to the group guarded by the start time. SIGKILL is always
 *   the helper, to the group and then to the tag.
 * - On a terminal (spec 1.5, `terminal-mode.ts`) every byte is `stdout`,
 *   and the reports come from a follower of the supervisor's record.
 * - A background command (spec 1.2, `follower-chain.ts`) is read through
 *   followers of its record; nothing the driver does on its own touches it.
 * - `command-state.ts` holds what the modes share with the driver.
 */
import { CapabilityNotSupported, SpawnFailed, StdinClosed, TransportError, type Signal, type StreamName } from '@sandstream/types';
import type { CommandSpec, DriverEvents, ProcessDriver, StartedProcess } from '@sandstream/types/runtime';
import { CommandHelpers } from './command-helpers.js';
import { CommandState } from './command-state.js';
import { describeStatus, noexecMessage, statusOf, type FollowMode, type RemoteDriverSettings } from './driver-settings.js';
import { FollowerChain } from './follower-chain.js';
import { registerFollower, unregisterFollower } from './following.js';
import { abandonArgv } from './helpers.js';
import { launchRequest } from './launch.js';
import { ReportSplitter, type ExitStatus as ReportedStatus, type StartReport, type SupervisorReport } from './reports.js';
import { retry } from './retry.js';
import { TerminalMode } from './terminal-mode.js';
import type { TransportEnd } from './transport.js';

export type { FollowMode, RemoteDriverSettings } from './driver-settings.js';

/**
 * One command over a transport. Made by {@link RemoteCommands.createDriver};
 * `id` is the command's tag and report mark.
 */
export class RemoteDriver implements ProcessDriver {
  readonly #command: CommandSpec;
  readonly #settings: RemoteDriverSettings;
  readonly #id: string;
  readonly #splitter: ReportSplitter;
  /** Its link and what the runtime was told, shared with its terminal or follow mode. */
  readonly #state = new CommandState();
  #identity: StartReport | undefined;
  #exit: ReportedStatus | undefined;
  /** Its helper commands, and the kill of its tree under way. */
  readonly #helpers: CommandHelpers;
  readonly #onFateUnknown: ((id: string) => void) | undefined;
  /** Follow mode: the command is read through followers of its record (spec 1.2). */
  readonly #followers: FollowerChain | undefined;
  /** Lets go of the owner lease this command holds (foreground only). */
  #releaseLease: (() => void) | undefined;
  /** The supervisor reported `lost`: the owner lease lapsed and it ended the tree itself. */
  #ownerLost = false;
  /** Terminal mode (spec 1.5): the follower of the supervisor's record, and how each stream ended. */
  #tty: TerminalMode | undefined;

  /**
   * @param onFateUnknown - Told the id once this driver gave up on ending what the command may
   *   have started (a start of unknown outcome, a kill not confirmed within the policy), so the
   *   handle can sweep it again in the background ({@link RemoteCommands} does).
   */
  constructor(command: CommandSpec, settings: RemoteDriverSettings, id: string, onFateUnknown?: (id: string) => void, follow?: FollowMode) {
    this.#command = command;
    this.#settings = settings;
    this.#id = id;
    this.#splitter = new ReportSplitter(id);
    this.#helpers = new CommandHelpers(settings, command, id);
    this.#onFateUnknown = onFateUnknown;
    this.#followers =
      follow === undefined
        ? undefined
        : new FollowerChain(follow, settings, id, this.#helpers, this.#state, {
            output: (stream, data, hidden) => this.#onOutput(stream, data, hidden),
            end: (end) => this.#onEnd(end),
            describe: (error) => this.#describe(error),
          });
  }

  /** The command's tag and report mark. */
  get id(): string {
    return this.#id;
  }

  /** A background command on a terminal: its record (spec 1.5). */
  get #terminalRecord(): string | undefined {
    return this.#followers?.following.mode.terminalRecord;
  }

  start(events: DriverEvents): Promise<StartedProcess> {
    const started = this.#state.begin(events);
    const followers = this.#followers;
    if (this.#command.pty !== undefined && followers === undefined) {
      if (this.#settings.transport.pty !== true) {
        this.#state.startFailed(new CapabilityNotSupported('pty', 'a command on a terminal'));
        return started;
      }
      this.#startOnTerminal();
      return started;
    }
    if (followers === undefined) {
      const held = this.#settings.lease?.hold(this.#command.user);
      this.#releaseLease = held?.release;
      const request = launchRequest(this.#id, this.#command, this.#settings, held?.lease);
      this.#state.process = this.#settings.transport.start(request, {
        output: (stream, data) => this.#onOutput(stream, data),
        end: (end) => void this.#onEnd(end),
      });
      return started;
    }
    registerFollower(this.#id, this);
    followers.following.launch(this.#settings.transport, this.#command, this.#id, (error) => this.#describe(error)).then(
      () => followers.follow(),
      (error: Error) => this.#state.startFailed(error),
    );
    return started;
  }

  /** Terminal mode: the supervisor on a terminal, and beside it the follower of its record. */
  #startOnTerminal(): void {
    const held = this.#settings.lease?.hold(this.#command.user);
    this.#releaseLease = held?.release;
    const tty = new TerminalMode(this.#settings, this.#command, this.#id, this.#helpers, this.#state, {
      reports: (data) => this.#onOutput('stderr', data, true),
      closeLinks: () => this.#closeLinks(),
      end: (end) => this.#onEnd(end),
      broken: (error, sent) => this.#broken(error, sent),
    });
    this.#tty = tty;
    // The supervisor's process is the driver's before the follower starts: an end of the
    // follower's closes both.
    this.#state.process = tty.startSupervisor(held?.lease);
    tty.startFollower();
  }

  /** Closes the streams of the command: the supervisor's, and in terminal mode the follower's. */
  #closeLinks(): void {
    this.#state.process?.close();
    this.#tty?.closeFollower();
  }

  /**
   * Cuts the command's current link, as a proxy that drops it would (`severLinks`): a follower
   * follows again from where it stopped; a foreground command's stream is broken, so its tree is
   * ended and the Process fails (spec 1.4, the owner-loss rule). Returns whether there was a link.
   */
  sever(): boolean {
    if (this.#state.finished) return false;
    if (this.#followers !== undefined) {
      this.#followers.sever();
      return true;
    }
    if (this.#state.process === undefined || !this.#state.startSettled) return false;
    this.#closeLinks();
    void this.#broken(new Error('the link was cut'), true);
    return true;
  }

  /** `hidden`: standard error a follow-only attach does not deliver; only its report frames count. */
  #onOutput(stream: StreamName, data: Uint8Array, hidden = false): void {
    if (this.#state.ended || this.#state.released) return;
    if (stream === 'stdout') {
      this.#state.output('stdout', data);
      return;
    }
    let split;
    try {
      split = this.#splitter.push(data);
    } catch (error) {
      void this.#broken(error, true);
      return;
    }
    if (!hidden) this.#stderr(split.output);
    for (const report of split.reports) this.#onReport(report);
  }

  #stderr(bytes: Uint8Array): void {
    if (bytes.byteLength === 0) return;
    // Under a terminal this is the follower's: nothing but reports is in the record.
    if (this.#tty !== undefined) return;
    this.#state.noteStartOutput(bytes);
    this.#state.output('stderr', bytes);
  }

  #onReport(report: SupervisorReport): void {
    this.#state.process?.reported?.(report);
    if (this.#state.done) return;
    switch (report.type) {
      case 'start':
        this.#identity = report;
        this.#state.started(report.pid);
        return;
      case 'noexec':
        this.#state.startFailed(new SpawnFailed(this.#command.argv, noexecMessage(report.reason, this.#command.argv[0], this.#settings.paths.prlimit)));
        return;
      case 'exit':
        this.#exit = report.status;
        return;
      case 'held':
        // Members of the tree outlived the leader: the runtime winds them down.
        if (!this.#state.gone) this.#state.leaderExited(statusOf(this.#exit, undefined));
        return;
      case 'gone':
        this.#state.gone = true;
        return;
      case 'lost':
        this.#ownerLost = true;
        return;
    }
  }

  async #onEnd(end: TransportEnd): Promise<void> {
    const state = this.#state;
    if (state.ended) return;
    let tail;
    try {
      tail = this.#splitter.end();
    } catch (error) {
      state.ended = true;
      await this.#broken(error, true);
      return;
    }
    this.#stderr(tail.output);
    for (const report of tail.reports) this.#onReport(report);
    state.ended = true;
    if (state.done || state.released) return;
    if (end.kind === 'broken') {
      await this.#broken(end.error, end.sent);
      return;
    }
    if (!state.startSettled) {
      const said = this.#state.startOutput.trim();
      const reason =
        end.kind === 'refused'
          ? end.reason
          : `the supervisor ended (${describeStatus(end.status)}) before the command ran${said === '' ? '' : `: ${said}`}`;
      state.startFailed(new SpawnFailed(this.#command.argv, reason, end.kind === 'refused' && end.error !== undefined ? { cause: end.error } : undefined));
      return;
    }
    const transportStatus = end.kind === 'exit' ? end.status : undefined;
    if (!state.gone) {
      // The supervisor ended without seeing the tree gone: it was killed (the runtime's SIGKILL,
      // an OOM kill). What it left is swept by the tag before the end is reported, its holder too
      // (the tree's kill leaves the holder to the supervisor, which is no more).
      try {
        await (this.#helpers.killing ?? this.#helpers.killTree(this.#identity));
        await this.#helpers.sweepHolder();
      } catch (error) {
        this.#onFateUnknown?.(this.#id);
        state.fail(new TransportError(`command ${this.#identity!.pid} ended but its tree could not be confirmed gone: ${this.#describe(error)}`, { cause: error }));
        return;
      }
    }
    if (state.done) return;
    if (this.#ownerLost) {
      // The renewals stopped reaching the sandbox while this host still read the stream: the
      // status is the termination's, not the command's own end.
      state.fail(new TransportError(`command ${this.#identity!.pid} was ended in the sandbox: its owner lease lapsed (no renewal arrived in time), so its supervisor took the owner for lost (spec 1.4)`));
      return;
    }
    state.exit(statusOf(this.#exit, transportStatus));
  }

  /** The link broke (or the stream is not the supervisor's): the command's fate, or its output, is unknown. */
  async #broken(error: unknown, sent: boolean): Promise<void> {
    const state = this.#state;
    if (state.done) return;
    if (this.#followers !== undefined) {
      // What a follower printed is not the supervisor's: the command runs on, attachable.
      state.process?.close();
      const lost = new TransportError(`the output of background command ${this.#id} could not be read (${this.#describe(error)}); it runs on: attach again to read it`, { cause: error, commandId: this.#id });
      if (!state.startSettled) state.startFailed(lost);
      else state.fail(lost);
      return;
    }
    if (!state.startSettled) {
      // Never started again. It may be running: find it by its tag and kill it, unless the request
      // never left this host.
      if (sent) {
        await this.#helpers.repeat(() => this.#helpers.run(abandonArgv(this.#settings.paths.shell, this.#id))).catch(() => undefined);
        // A start the backend has but had not applied may begin after that sweep found nothing.
        this.#onFateUnknown?.(this.#id);
      }
      const argv0 = JSON.stringify(this.#command.argv[0] ?? '');
      state.startFailed(
        new TransportError(`the start of ${argv0} ${sent ? 'has an unknown outcome' : 'could not be sent'}: ${this.#describe(error)}`, { cause: error }),
      );
      return;
    }
    state.take();
    this.#closeLinks();
    // The owner lost its link to the command (spec 1.4): the tree gets the termination sequence.
    const unkilled = await (this.#helpers.killing ?? this.#helpers.terminateTree(this.#identity)).then(() => undefined, (failure: unknown) => failure ?? 'no reason given');
    if (unkilled !== undefined) this.#onFateUnknown?.(this.#id);
    // The caller is told what may be left: a backend that kept the command while the link was down
    // (dockerd's live restore) runs it on until a sweep reaches it.
    const left =
      unkilled === undefined
        ? ''
        : `; its tree could not be confirmed killed (${this.#describe(unkilled)}) and may still run: it is swept again in the background, and closing the sandbox sweeps it by its tag`;
    state.failTaken(new TransportError(`the stream of command ${this.#identity!.pid} broke: ${this.#describe(error)}${left}`, { cause: error }));
  }

  #describe(error: unknown): string {
    if (this.#settings.describe !== undefined) return this.#settings.describe(error);
    return error instanceof Error ? error.message : String(error);
  }

  async signal(signal: Signal): Promise<void> {
    if (this.#state.ended || this.#state.released) return;
    const identity = this.#identity!;
    const process = this.#state.process;
    try {
      if (signal === 'SIGKILL') {
        await this.#helpers.killTree(this.#identity);
      } else if (this.#followers === undefined && process?.signal !== undefined && this.#settings.transport.signals?.has(signal) === true) {
        // (Not in follow mode: the transport's process is a follower there, not the supervisor.)
        await process.signal(signal);
      } else if (this.#terminalRecord !== undefined || this.#tty?.supervisor !== undefined) {
        // The supervisor forwards it to the terminal's whole session, which the group is not (a
        // job of an interactive shell leads a group of its own; spec 1.5, T5). A background
        // command's is named by its record.
        await this.#helpers.signalSupervisor(signal, this.#terminalRecord ?? this.#tty!.supervisor!);
      } else {
        await this.#helpers.signalGroup(identity, signal);
      }
    } catch (error) {
      // Even when the tree has ended meanwhile: whether this request took effect is unknown.
      throw new TransportError(`could not deliver ${signal} to command ${identity.pid}: ${this.#describe(error)}`, { cause: error });
    }
  }

  writeStdin(data: Uint8Array): Promise<void> {
    // A background terminal's end-of-file (the runtime's one input there, T3) is typed by `script`,
    // which reads /dev/null (background.sh): a follower has no input, and an attach sends no other.
    return this.#terminalRecord !== undefined ? Promise.resolve() : this.#state.process!.writeStdin(data);
  }

  /**
   * Closing is idempotent, so a close that failed on the link (`TransportError`: a connection
   * refused for want of descriptors, a reset) is repeated within the policy. Left failed, the
   * command would wait for end-of-file for good, and the caller has no other way to give it.
   */
  closeStdin(): Promise<void> {
    // A terminal's input is never closed: the runtime types end-of-file on it (spec 1.5, T3).
    if (this.#tty !== undefined || this.#terminalRecord !== undefined) return Promise.resolve();
    const policy = { ...this.#settings.retry, deadlineMs: this.#settings.retry.deadlineMs ?? this.#settings.requestTimeoutMs };
    return retry(policy, () => this.#state.process!.closeStdin(), { retryable: (error) => error instanceof TransportError && !this.#state.done && !this.#state.released });
  }

  /** Spec 1.5: the terminal's size, through the transport, or a background command's in the sandbox. */
  async resize(cols: number, rows: number): Promise<void> {
    const process = this.#state.process;
    const record = this.#terminalRecord;
    if (record === undefined && (this.#tty === undefined || process?.resize === undefined)) throw new CapabilityNotSupported('pty', 'resize()');
    if (this.#state.finished) throw new StdinClosed('the command has ended; its terminal is gone');
    await (record === undefined ? process!.resize!(cols, rows) : this.#helpers.resizeInRecord(record, cols, rows));
  }

  pause(): void {
    this.#state.process?.pause?.();
  }

  resume(): void {
    this.#state.process?.resume?.();
  }

  async release(): Promise<void> {
    // Released before the driver reported an end: the runtime gave up on the command (possibly
    // while the start was pending). End what may have started, bounded, best effort.
    const abandoned = !this.#state.done;
    this.#state.released = true;
    this.#releaseLease?.();
    this.#state.take();
    this.#state.process?.resume?.();
    this.#closeLinks();
    this.#tty?.stopWaiting();
    if (this.#followers !== undefined) {
      unregisterFollower(this.#id, this);
      // Letting go of a background command never touches it; a follower still printing goes.
      if (abandoned) await this.#followers.sweep();
      return;
    }
    if (!abandoned) {
      await this.#helpers.killing?.catch(() => undefined);
      return;
    }
    const killed = await (this.#helpers.killing ?? this.#helpers.killTree(this.#identity)).then(
      () => true,
      () => false,
    );
    // Unstarted as far as this driver knows, the start may still begin: it is swept again later.
    if (!killed || !this.#state.startSettled) this.#onFateUnknown?.(this.#id);
  }
}
