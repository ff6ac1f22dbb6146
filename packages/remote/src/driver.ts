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
 */
import { SpawnFailed, TransportError, type Signal, type StreamName } from '@sandstream/types';
import type { CommandSpec, DriverEvents, ProcessDriver, StartedProcess } from '@sandstream/types/runtime';
import { CommandHelpers } from './command-helpers.js';
import { describeStatus, noexecMessage, statusOf, utf8, type FollowMode, type RemoteDriverSettings } from './driver-settings.js';
import { Following, registerFollower, unregisterFollower } from './following.js';
import { abandonArgv, sweepArgv } from './helpers.js';
import { launchRequest } from './launch.js';
import { ReportSplitter, type ExitStatus as ReportedStatus, type StartReport, type SupervisorReport } from './reports.js';
import { backoffMs, retry } from './retry.js';
import type { TransportEnd, TransportProcess } from './transport.js';

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
  #events: DriverEvents | undefined;
  #process: TransportProcess | undefined;
  #resolveStart: ((started: StartedProcess) => void) | undefined;
  #rejectStart: ((error: Error) => void) | undefined;
  #identity: StartReport | undefined;
  #startSettled = false;
  #exit: ReportedStatus | undefined;
  #gone = false;
  #ended = false;
  #terminal = false;
  #released = false;
  /** Its helper commands, and the kill of its tree under way. */
  readonly #helpers: CommandHelpers;
  /** The first bytes of standard error, for the message of a supervisor that ended without a report. */
  #stderrHead = '';
  readonly #onFateUnknown: ((id: string) => void) | undefined;
  /** Follow mode: the command is read through followers of its record (spec 1.2). */
  readonly #following: Following | undefined;
  /** Followers started again in a row, without a byte between them. */
  #refollows = 0;
  /** Lets go of the owner lease this command holds (foreground only). */
  #releaseLease: (() => void) | undefined;
  /** The supervisor reported `lost`: the owner lease lapsed and it ended the tree itself. */
  #ownerLost = false;

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
    this.#following = follow === undefined ? undefined : new Following(follow);
  }

  /** The command's tag and report mark. */
  get id(): string {
    return this.#id;
  }

  start(events: DriverEvents): Promise<StartedProcess> {
    this.#events = events;
    const started = new Promise<StartedProcess>((resolve, reject) => {
      this.#resolveStart = resolve;
      this.#rejectStart = reject;
    });
    const following = this.#following;
    if (following === undefined) {
      const held = this.#settings.lease?.hold(this.#command.user);
      this.#releaseLease = held?.release;
      const request = launchRequest(this.#id, this.#command, this.#settings, held?.lease);
      this.#process = this.#settings.transport.start(request, {
        output: (stream, data) => this.#onOutput(stream, data),
        end: (end) => void this.#onEnd(end),
      });
      return started;
    }
    registerFollower(this.#id, this);
    following.launch(this.#settings.transport, this.#command, this.#id, (error) => this.#describe(error)).then(
      () => this.#follow(),
      (error: Error) => this.#startFailed(error),
    );
    return started;
  }

  /** Starts a follower where the last one stopped (follow mode). */
  #follow(): void {
    const following = this.#following!;
    if (this.#terminal || this.#released) return;
    this.#ended = false;
    this.#process = this.#settings.transport.start(following.mode.follower(following.offsets()), {
      output: (stream, data) => {
        if (this.#ended || this.#released) return;
        this.#refollows = 0;
        if (stream === 'stdout') {
          following.stdout(data);
          this.#onOutput('stdout', data);
          return;
        }
        const { hidden, shown } = following.stderr(data);
        if (hidden.byteLength > 0) this.#onOutput('stderr', hidden, true);
        if (shown.byteLength > 0) this.#onOutput('stderr', shown);
      },
      end: (end) => void this.#onFollowerEnd(end),
    });
  }

  /**
   * A follower ended. It ends by itself (exit 0) once the supervisor is gone and every byte was
   * printed, and with 3 when the record is gone; any other end is a broken link, followed again
   * from the bytes already read, as often as the retry policy allows without a byte in between.
   * Failing that, the command runs on: the error carries its id (ADR-0036).
   */
  async #onFollowerEnd(end: TransportEnd): Promise<void> {
    if (this.#ended || this.#terminal || this.#released) return;
    const status = end.kind === 'exit' ? end.status?.exitCode : undefined;
    if ((end.kind === 'exit' && (status === undefined || status === 0)) || this.#gone) {
      await this.#onEnd(end);
      return;
    }
    this.#ended = true;
    this.#process?.close();
    const policy = this.#settings.retry;
    if (status !== 3 && this.#refollows < policy.attempts) {
      await new Promise((resolve) => setTimeout(resolve, backoffMs(policy, this.#refollows++)).unref());
      // The old follower may still print where the backend kept it: swept first.
      if (end.kind === 'broken') await this.#helpers.run(sweepArgv(this.#settings.paths.shell, this.#following!.mode.followerTag)).catch(() => undefined);
      this.#follow();
      return;
    }
    const why = status === 3 ? 'its record is gone' : end.kind === 'broken' ? this.#describe(end.error) : end.kind === 'refused' ? end.reason : `the follower ended with ${describeStatus(end.status)}`;
    const error = new TransportError(`the link to background command ${this.#id} broke (${why}); it may run on: attach again to read it`, { commandId: this.#id });
    if (!this.#startSettled) this.#startFailed(error);
    else this.#fail(error);
  }

  /**
   * Cuts the command's current link, as a proxy that drops it would (`severLinks`): a follower
   * follows again from where it stopped; a foreground command's stream is broken, so its tree is
   * ended and the Process fails (spec 1.4, the owner-loss rule). Returns whether there was a link.
   */
  sever(): boolean {
    if (this.#ended || this.#terminal || this.#released) return false;
    if (this.#following !== undefined) {
      this.#process?.close();
      void this.#onFollowerEnd({ kind: 'broken', error: new Error('the link was cut'), sent: true });
      return true;
    }
    if (this.#process === undefined || !this.#startSettled) return false;
    this.#process.close();
    void this.#broken(new Error('the link was cut'), true);
    return true;
  }

  /** `hidden`: standard error a follow-only attach does not deliver; only its report frames count. */
  #onOutput(stream: StreamName, data: Uint8Array, hidden = false): void {
    if (this.#ended || this.#released) return;
    if (stream === 'stdout') {
      if (!this.#terminal) this.#events!.output('stdout', data);
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
    if (!this.#startSettled && this.#stderrHead.length < 512) this.#stderrHead += utf8.decode(bytes.subarray(0, 512));
    if (!this.#terminal) this.#events!.output('stderr', bytes);
  }

  #onReport(report: SupervisorReport): void {
    this.#process?.reported?.(report);
    if (this.#terminal) return;
    switch (report.type) {
      case 'start':
        this.#identity = report;
        this.#startSettled = true;
        this.#resolveStart!({ pid: report.pid, commandId: String(report.pid) });
        return;
      case 'noexec':
        this.#startFailed(new SpawnFailed(this.#command.argv, noexecMessage(report.reason, this.#command.argv[0], this.#settings.paths.prlimit)));
        return;
      case 'exit':
        this.#exit = report.status;
        return;
      case 'held':
        // Members of the tree outlived the leader: the runtime winds them down.
        if (!this.#gone) this.#events!.leaderExited(statusOf(this.#exit, undefined));
        return;
      case 'gone':
        this.#gone = true;
        return;
      case 'lost':
        this.#ownerLost = true;
        return;
    }
  }

  async #onEnd(end: TransportEnd): Promise<void> {
    if (this.#ended) return;
    let tail;
    try {
      tail = this.#splitter.end();
    } catch (error) {
      this.#ended = true;
      await this.#broken(error, true);
      return;
    }
    this.#stderr(tail.output);
    for (const report of tail.reports) this.#onReport(report);
    this.#ended = true;
    if (this.#terminal || this.#released) return;
    if (end.kind === 'broken') {
      await this.#broken(end.error, end.sent);
      return;
    }
    if (!this.#startSettled) {
      const said = this.#stderrHead.trim();
      const reason =
        end.kind === 'refused'
          ? end.reason
          : `the supervisor ended (${describeStatus(end.status)}) before the command ran${said === '' ? '' : `: ${said}`}`;
      this.#startFailed(new SpawnFailed(this.#command.argv, reason, end.kind === 'refused' && end.error !== undefined ? { cause: end.error } : undefined));
      return;
    }
    const transportStatus = end.kind === 'exit' ? end.status : undefined;
    if (!this.#gone) {
      // The supervisor ended without seeing the tree gone: it was killed (the runtime's SIGKILL,
      // an OOM kill). What it left is swept by the tag before the end is reported.
      try {
        await (this.#helpers.killing ?? this.#helpers.killTree(this.#identity));
      } catch (error) {
        this.#onFateUnknown?.(this.#id);
        this.#fail(new TransportError(`command ${this.#identity!.pid} ended but its tree could not be confirmed gone: ${this.#describe(error)}`, { cause: error }));
        return;
      }
    }
    if (this.#terminal) return;
    if (this.#ownerLost) {
      // The renewals stopped reaching the sandbox while this host still read the stream: the
      // status is the termination's, not the command's own end.
      this.#fail(new TransportError(`command ${this.#identity!.pid} was ended in the sandbox: its owner lease lapsed (no renewal arrived in time), so its supervisor took the owner for lost (spec 1.4)`));
      return;
    }
    this.#terminal = true;
    this.#events!.exit(statusOf(this.#exit, transportStatus));
  }

  /** The link broke (or the stream is not the supervisor's): the command's fate, or its output, is unknown. */
  async #broken(error: unknown, sent: boolean): Promise<void> {
    if (this.#terminal) return;
    if (this.#following !== undefined) {
      // What a follower printed is not the supervisor's: the command runs on, attachable.
      this.#process?.close();
      const lost = new TransportError(`the output of background command ${this.#id} could not be read (${this.#describe(error)}); it runs on: attach again to read it`, { cause: error, commandId: this.#id });
      if (!this.#startSettled) this.#startFailed(lost);
      else this.#fail(lost);
      return;
    }
    if (!this.#startSettled) {
      // Never started again. It may be running: find it by its tag and kill it, unless the request
      // never left this host.
      if (sent) {
        await this.#helpers.repeat(() => this.#helpers.run(abandonArgv(this.#settings.paths.shell, this.#id))).catch(() => undefined);
        // A start the backend has but had not applied may begin after that sweep found nothing.
        this.#onFateUnknown?.(this.#id);
      }
      const argv0 = JSON.stringify(this.#command.argv[0] ?? '');
      this.#startFailed(
        new TransportError(`the start of ${argv0} ${sent ? 'has an unknown outcome' : 'could not be sent'}: ${this.#describe(error)}`, { cause: error }),
      );
      return;
    }
    this.#terminal = true;
    this.#process?.close();
    // The owner lost its link to the command (spec 1.4): the tree gets the termination sequence.
    const unkilled = await (this.#helpers.killing ?? this.#helpers.terminateTree(this.#identity)).then(() => undefined, (failure: unknown) => failure ?? 'no reason given');
    if (unkilled !== undefined) this.#onFateUnknown?.(this.#id);
    // The caller is told what may be left: a backend that kept the command while the link was down
    // (dockerd's live restore) runs it on until a sweep reaches it.
    const left =
      unkilled === undefined
        ? ''
        : `; its tree could not be confirmed killed (${this.#describe(unkilled)}) and may still run: it is swept again in the background, and closing the sandbox sweeps it by its tag`;
    this.#events!.fail(new TransportError(`the stream of command ${this.#identity!.pid} broke: ${this.#describe(error)}${left}`, { cause: error }));
  }

  #startFailed(error: Error): void {
    if (this.#startSettled) {
      this.#fail(error);
      return;
    }
    this.#startSettled = true;
    this.#terminal = true;
    this.#rejectStart!(error);
  }

  #fail(error: Error): void {
    if (this.#terminal) return;
    this.#terminal = true;
    this.#events!.fail(error);
  }

  #describe(error: unknown): string {
    if (this.#settings.describe !== undefined) return this.#settings.describe(error);
    return error instanceof Error ? error.message : String(error);
  }

  async signal(signal: Signal): Promise<void> {
    if (this.#ended || this.#released) return;
    const identity = this.#identity!;
    try {
      if (signal === 'SIGKILL') {
        await this.#helpers.killTree(this.#identity);
      } else if (this.#following === undefined && this.#process?.signal !== undefined && this.#settings.transport.signals?.has(signal) === true) {
        // (Not in follow mode: the transport's process is a follower there, not the supervisor.)
        await this.#process.signal(signal);
      } else {
        await this.#helpers.signalGroup(identity, signal);
      }
    } catch (error) {
      // Even when the tree has ended meanwhile: whether this request took effect is unknown.
      throw new TransportError(`could not deliver ${signal} to command ${identity.pid}: ${this.#describe(error)}`, { cause: error });
    }
  }

  writeStdin(data: Uint8Array): Promise<void> {
    return this.#process!.writeStdin(data);
  }

  /**
   * Closing is idempotent, so a close that failed on the link (`TransportError`: a connection
   * refused for want of descriptors, a reset) is repeated within the policy. Left failed, the
   * command would wait for end-of-file for good, and the caller has no other way to give it.
   */
  closeStdin(): Promise<void> {
    const policy = { ...this.#settings.retry, deadlineMs: this.#settings.retry.deadlineMs ?? this.#settings.requestTimeoutMs };
    return retry(policy, () => this.#process!.closeStdin(), { retryable: (error) => error instanceof TransportError && !this.#terminal && !this.#released });
  }

  pause(): void {
    this.#process?.pause?.();
  }

  resume(): void {
    this.#process?.resume?.();
  }

  async release(): Promise<void> {
    // Released before the driver reported an end: the runtime gave up on the command (possibly
    // while the start was pending). End what may have started, bounded, best effort.
    const abandoned = !this.#terminal;
    this.#released = true;
    this.#releaseLease?.();
    this.#terminal = true;
    this.#process?.resume?.();
    this.#process?.close();
    if (this.#following !== undefined) {
      unregisterFollower(this.#id, this);
      // Letting go of a background command never touches it; a follower still printing goes.
      if (abandoned) await this.#helpers.run(sweepArgv(this.#settings.paths.shell, this.#following.mode.followerTag)).catch(() => undefined);
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
    if (!killed || !this.#startSettled) this.#onFateUnknown?.(this.#id);
  }
}
