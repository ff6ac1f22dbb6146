import { Code } from '@connectrpc/connect';
import { SpawnFailed, StdinClosed, TransportError, type ResourceLimits, type Signal } from '@sandstream/types';
import type { CommandSpec, DriverEvents, ExitStatus, ProcessDriver, StartedProcess } from '@sandstream/types/runtime';
import { signalFromStatus } from './emulator/status.js';
import { basicAuth, describe, isDaemonAnswer, neverSent, type ProcessClient } from './connection.js';
import { Signal as EnvdSignal, type ProcessEvent, type StartResponse } from './gen/envd-process_pb.js';
import { randomUUID } from 'node:crypto';
import { LAUNCH, LAUNCH_FAILED, LAUNCH_OK, LAUNCH_PREFIX, RELAY, SIGNAL, UNBLOCK } from './scripts.js';

/** What every driver of one sandbox shares. */
export interface E2BDriverSettings {
  readonly client: ProcessClient;
  /** Variables added to envd's environment for every command; a command's own `env` is merged over them. */
  readonly env: Readonly<Record<string, string>>;
  /** Working directory of commands that name none (undefined: envd's default, the user's home). */
  readonly cwd: string | undefined;
  /** `setsid` inside the sandbox. */
  readonly setsidPath: string;
  /** A POSIX shell inside the sandbox. */
  readonly shellPath: string;
  /** Interval envd is asked to send keepalives at on quiet streams, in seconds. */
  readonly keepaliveSeconds: number;
  /** A stream with neither an event nor a keepalive for this long is taken as broken. */
  readonly stallMs: number;
  /** Bound on the helper commands (signal deliveries) and unary calls that have one. */
  readonly requestTimeoutMs: number;
  /** util-linux's `prlimit` inside the sandbox, for resource limits. */
  readonly prlimitPath: string;
  /** A writable directory inside the sandbox for each command's FIFOs. */
  readonly tmpDir: string;
  /**
   * After envd reported the leader's end, how long to wait for the relay to
   * report the tree gone before telling the runtime that something outlived
   * the leader (it then winds the tree down).
   */
  readonly settleMs: number;
}

/** Largest stdin payload sent in one SendInput request. */
const STDIN_CHUNK = 1024 * 1024;

const latin1 = new TextDecoder('latin1');
const utf8 = new TextDecoder();

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a, 0);
  out.set(b, a.byteLength);
  return out;
}

function exitStatusOf(end: { exitCode: number; exited: boolean; status: string }): ExitStatus {
  if (end.exited) return { exitCode: end.exitCode, signal: null };
  // envd reports a signal death as exit code -1 and a status such as
  // "signal: killed". An unknown word would be a newer envd's; SIGKILL is
  // the only signal envd itself sends, so it is the reading least likely wrong.
  return { exitCode: null, signal: signalFromStatus(end.status) ?? 'SIGKILL' };
}

type StreamEvent = ProcessEvent['event'];

/**
 * Reads a server stream of process events with a watchdog: an event or a
 * keepalive must arrive within `stallMs` unless reading is paused.
 */
class EventReader {
  private readonly iterator: AsyncIterator<StartResponse>;
  private timer: NodeJS.Timeout | undefined;
  stalled = false;

  constructor(
    stream: AsyncIterable<StartResponse>,
    private readonly abort: AbortController,
    private readonly stallMs: number,
  ) {
    this.iterator = stream[Symbol.asyncIterator]();
  }

  async next(): Promise<StreamEvent | undefined> {
    this.timer = setTimeout(() => {
      this.stalled = true;
      this.abort.abort(new Error(`no event and no keepalive for ${this.stallMs} ms`));
    }, this.stallMs);
    try {
      const result = await this.iterator.next();
      return result.done ? undefined : result.value.event?.event;
    } finally {
      clearTimeout(this.timer);
    }
  }
}

type StreamName = 'stdout' | 'stderr';

/**
 * The `prlimit` words that run a command under its limits. `prlimit` execs
 * the command, so pid, group and exit status stay its own. The CPU hard
 * limit is a second above the soft one, so the command gets SIGXCPU (which
 * names the cause) before SIGKILL.
 */
function limitArgs(prlimit: string, limits: ResourceLimits): string[] {
  const args = [prlimit];
  if (limits.cpuSeconds !== undefined) args.push(`--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`);
  if (limits.addressSpaceBytes !== undefined) args.push(`--as=${limits.addressSpaceBytes}`);
  if (limits.fileSizeBytes !== undefined) args.push(`--fsize=${limits.fileSizeBytes}`);
  if (limits.openFiles !== undefined) args.push(`--nofile=${limits.openFiles}`);
  args.push('--');
  return args;
}

/**
 * One command over envd's process service, as two envd processes (see
 * `scripts.ts`): the command, which leads its own process group and whose
 * end event gives its exact status, and a relay, which carries its output
 * and ends once every byte is in and nothing of the group is alive. The
 * pid of the command's start event is the group id and the `commandId`.
 * Signals go to the whole group through a helper command in the sandbox.
 */
export class E2BDriver implements ProcessDriver {
  private events: DriverEvents | undefined;
  private readonly controllers = new Set<AbortController>();
  private readonly dir: string;
  private readonly tag: string;
  /** Headers naming the command's account, on every request about it. */
  private readonly auth: Record<string, string>;
  private pid: number | undefined;
  private launched = false;
  private startSettled = false;
  private resolveStart: ((started: StartedProcess) => void) | undefined;
  private rejectStart: ((error: Error) => void) | undefined;
  private stderrHead: Uint8Array = new Uint8Array(0);
  private leaderStatus: ExitStatus | undefined;
  private relayDone = false;
  /** The leader's start time as the launcher read it (empty without /proc): its group's identity. */
  private leaderStart = '';
  /** The relay's pid in the sandbox, once its start event came. */
  private relayPid: number | undefined;
  private relayStarted = false;
  /** The unblocking helper started when the relay was late, awaited before release returns. */
  private unblocking: Promise<void> | undefined;
  /**
   * Whether the sandbox may hold something of this command's besides its
   * tree: the FIFO directory (from the launcher's checks on) and the relay.
   * Cleared when the relay removed the directory and ended, or when the
   * launcher refused before creating it.
   */
  private leftovers = false;
  private settleTimer: NodeJS.Timeout | undefined;
  private terminal = false;
  private released = false;
  private paused = false;
  private resumeWaiter: (() => void) | undefined;

  constructor(
    private readonly command: CommandSpec,
    private readonly settings: E2BDriverSettings,
  ) {
    const id = randomUUID();
    this.dir = `${settings.tmpDir.replace(/\/+$/, '')}/sandstream-${id}`;
    this.tag = `sandstream-${id}`;
    this.auth = command.user === undefined ? {} : { Authorization: basicAuth(command.user) };
  }

  start(events: DriverEvents): Promise<StartedProcess> {
    this.events = events;
    const { command, settings } = this;
    const abort = this.controller();
    // Another account's home may not exist (envd's default working directory
    // for it): such a command starts in `/` and moves to $HOME if it can.
    const homeCd = command.user !== undefined && command.cwd === undefined && settings.cwd === undefined;
    const cwd = command.cwd ?? settings.cwd ?? (homeCd ? '/' : undefined);
    const wrapper = command.limits === undefined ? [] : limitArgs(settings.prlimitPath, command.limits);
    const envs = { ...settings.env, ...command.env };
    // Set again as the command is exec'd: the launcher's shell drops or rewrites some (scripts.ts).
    const assignments = Object.entries(envs).map(([name, value]) => `${name}=${value}`);
    this.leftovers = true;
    const stream = settings.client.start(
      {
        process: {
          cmd: settings.setsidPath,
          args: [
            settings.shellPath, '-c', LAUNCH, 'sandstream', this.dir, homeCd ? '1' : '0',
            String(wrapper.length), String(assignments.length), ...assignments, ...wrapper, ...command.argv,
          ],
          envs,
          ...(cwd === undefined ? {} : { cwd }),
        },
        stdin: command.stdin === 'pipe',
        // Finds the command again when the start's outcome is unknown.
        tag: this.tag,
      },
      // No Connect-Timeout-Ms: envd would SIGKILL the leader alone when it
      // elapses. The runtime's timeout bounds the command, through signal().
      { signal: abort.signal, headers: this.keepaliveHeader() },
    );
    const started = new Promise<StartedProcess>((resolve, reject) => {
      this.resolveStart = resolve;
      this.rejectStart = reject;
    });
    void this.pumpCommand(new EventReader(stream, abort, settings.stallMs));
    return started;
  }

  private keepaliveHeader(): Record<string, string> {
    return { 'Keepalive-Ping-Interval': String(this.settings.keepaliveSeconds), ...this.auth };
  }

  private controller(): AbortController {
    const controller = new AbortController();
    this.controllers.add(controller);
    return controller;
  }

  /** The command's own stream: start event, the launcher's report, end event. */
  private async pumpCommand(reader: EventReader): Promise<void> {
    try {
      for (;;) {
        const event = await reader.next();
        if (this.released) return;
        if (event === undefined) throw new Error('the event stream ended without an end event');
        if (event.case === 'start') {
          this.pid = event.value.pid;
        } else if (event.case === 'data') {
          if (event.value.output.case === 'stderr') this.onLauncherReport(event.value.output.value);
        } else if (event.case === 'end') {
          this.onLeaderEnd(exitStatusOf(event.value), event.value.status);
          return;
        }
      }
    } catch (error) {
      if (this.released || this.terminal) return;
      await this.broken(reader.stalled ? new Error(`no event and no keepalive for ${this.settings.stallMs} ms`) : error, 'command');
    }
  }

  private onLauncherReport(data: Uint8Array): void {
    if (this.launched || this.startSettled) return;
    this.stderrHead = concat(this.stderrHead, data);
    const head = latin1.decode(this.stderrHead.subarray(0, 256));
    const plausible = head.length < LAUNCH_PREFIX.length ? LAUNCH_PREFIX.startsWith(head) : head.startsWith(LAUNCH_PREFIX);
    if (!plausible) {
      this.startFailed(new SpawnFailed(this.command.argv, `the launcher failed: ${utf8.decode(this.stderrHead).trim()}`));
      return;
    }
    const newline = head.indexOf('\n');
    if (newline < 0) return;
    const line = head.slice(0, newline + 1);
    const leaderStart = line.startsWith(`${LAUNCH_OK} `) ? line.slice(LAUNCH_OK.length + 1, -1) : undefined;
    if (leaderStart !== undefined && /^[0-9]*$/.test(leaderStart)) {
      this.leaderStart = leaderStart;
      this.launched = true;
      this.startSettled = true;
      this.startRelay();
      const started = { pid: this.pid!, commandId: String(this.pid) };
      this.resolveStart!(started);
      return;
    }
    const argv0 = JSON.stringify(this.command.argv[0] ?? '');
    const reason = line.startsWith(LAUNCH_FAILED) ? line.slice(LAUNCH_FAILED.length, -1) : line.trim();
    // The launcher checks argv[0] and the wrapper before it creates the FIFOs.
    if (reason === 'ENOENT' || reason === 'EACCES' || reason === 'NOWRAPPER') this.leftovers = false;
    this.startFailed(
      new SpawnFailed(
        this.command.argv,
        reason === 'ENOENT'
          ? `ENOENT: no such executable ${argv0}`
          : reason === 'EACCES'
            ? `EACCES: ${argv0} is not an executable file`
            : reason === 'NOWRAPPER'
              ? `ENOENT: the sandbox has no ${JSON.stringify(this.settings.prlimitPath)}, which resource limits need`
              : reason,
      ),
    );
  }

  /** The start is refused; nothing more is reported. */
  private startFailed(error: Error): void {
    if (this.startSettled) return;
    this.startSettled = true;
    this.terminal = true;
    this.rejectStart!(error);
  }

  private startRelay(): void {
    const abort = this.controller();
    this.relayStarted = true;
    const stream = this.settings.client.start(
      {
        process: { cmd: this.settings.shellPath, args: ['-c', RELAY, 'sandstream-relay', this.dir, String(this.pid), this.leaderStart], envs: {}, cwd: '/' },
        stdin: false,
        tag: this.relayTag(),
      },
      { signal: abort.signal, headers: this.keepaliveHeader() },
    );
    void this.pumpRelay(new EventReader(stream, abort, this.settings.stallMs));
  }

  /** The relay's stream: the command's output, then its end once every byte is in and the tree is gone. */
  private async pumpRelay(reader: EventReader): Promise<void> {
    try {
      for (;;) {
        if (this.paused) await new Promise<void>((resolve) => (this.resumeWaiter = resolve));
        if (this.released) return;
        const event = await reader.next();
        if (this.released) return;
        if (event === undefined) throw new Error('the output stream ended without an end event');
        if (event.case === 'start') {
          this.relayPid = event.value.pid;
        } else if (event.case === 'data') {
          const output = event.value.output;
          if ((output.case === 'stdout' || output.case === 'stderr') && !this.terminal) {
            this.events!.output(output.case as StreamName, output.value);
          }
        } else if (event.case === 'end') {
          if (!event.value.exited || event.value.exitCode !== 0) {
            throw new Error(`the output relay failed (${event.value.status})`);
          }
          this.relayDone = true;
          this.leftovers = false;
          this.maybeFinish();
          return;
        }
      }
    } catch (error) {
      if (this.released || this.terminal) return;
      await this.broken(reader.stalled ? new Error(`no event and no keepalive for ${this.settings.stallMs} ms`) : error, 'output');
    }
  }

  private onLeaderEnd(status: ExitStatus, description: string): void {
    if (this.terminal) return;
    if (!this.launched) {
      const said = utf8.decode(this.stderrHead).trim();
      this.startFailed(
        new SpawnFailed(this.command.argv, `the launcher ended (${description}) before the command ran${said === '' ? '' : `: ${said}`}`),
      );
      return;
    }
    this.leaderStatus = status;
    if (this.relayDone) {
      this.maybeFinish();
      return;
    }
    // Usually the relay reports within moments. If it does not, something
    // outlived the leader (or holds its output): the runtime winds it down.
    this.armSettle(status);
  }

  private armSettle(status: ExitStatus): void {
    this.settleTimer = setTimeout(() => {
      if (this.terminal || this.relayDone) return;
      this.events!.leaderExited(status);
      // A relay whose FIFOs were never opened by the command (it was
      // killed while starting) would wait for a writer forever.
      this.unblocking = this.helper(['-c', UNBLOCK, 'sandstream-unblock', this.dir]).catch(() => undefined);
    }, this.settings.settleMs);
  }

  private maybeFinish(): void {
    if (this.terminal || this.leaderStatus === undefined || !this.relayDone) return;
    this.terminal = true;
    clearTimeout(this.settleTimer);
    this.events!.exit(this.leaderStatus);
  }

  /** A stream broke: the command's fate, or its output, is unknown. */
  private async broken(error: unknown, which: 'command' | 'output'): Promise<void> {
    if (this.pid === undefined) {
      // No start event: envd either refused (a definite answer) or the
      // outcome is unknown. Never retried either way.
      if (isDaemonAnswer(error) && error.code === Code.InvalidArgument) {
        this.leftovers = false;
        this.startFailed(new SpawnFailed(this.command.argv, error.rawMessage, { cause: error }));
      } else if (this.command.user !== undefined && isDaemonAnswer(error) && error.code === Code.Unauthenticated && /invalid username/.test(error.rawMessage)) {
        this.leftovers = false;
        this.startFailed(new SpawnFailed(this.command.argv, `no such account ${JSON.stringify(this.command.user)} in the sandbox`, { cause: error }));
      } else {
        // It may be running: look for its tag and kill its group (best
        // effort, bounded), unless the request never left this host. Never
        // started again.
        if (neverSent(error)) this.leftovers = false;
        else await this.killByTag().catch(() => undefined);
        const outcome = neverSent(error) ? 'could not be sent' : 'has an unknown outcome';
        this.startFailed(
          new TransportError(`the start of ${JSON.stringify(this.command.argv[0] ?? '')} ${outcome}: ${describe(error)}`, {
            cause: error,
          }),
        );
      }
      return;
    }
    // The command may be running. Kill its group (best effort, bounded) so
    // that nothing is left behind, then report the broken link.
    await this.killGroup().catch(() => undefined);
    const failure = new TransportError(`the ${which} stream of command ${this.pid} broke: ${describe(error)}`, { cause: error });
    if (!this.startSettled) {
      this.startFailed(failure);
      return;
    }
    if (this.terminal) return;
    this.terminal = true;
    clearTimeout(this.settleTimer);
    this.events!.fail(failure);
  }

  /** Runs a shell helper in the sandbox, bounded by `requestTimeoutMs`; resolves once it ended. */
  private async helper(args: string[]): Promise<void> {
    const abort = new AbortController();
    const timer = setTimeout(
      () => abort.abort(new Error(`no answer within ${this.settings.requestTimeoutMs} ms`)),
      this.settings.requestTimeoutMs,
    );
    try {
      const stream = this.settings.client.start(
        { process: { cmd: this.settings.shellPath, args, envs: {}, cwd: '/' }, stdin: false },
        { signal: abort.signal, headers: this.keepaliveHeader() },
      );
      for await (const response of stream) {
        const event = response.event?.event;
        if (event?.case === 'end') {
          if (!event.value.exited || event.value.exitCode !== 0) throw new Error(`a helper command failed (${event.value.status})`);
          return;
        }
      }
      throw new Error('the helper stream ended without an end event');
    } finally {
      clearTimeout(timer);
      abort.abort();
    }
  }

  /**
   * Runs `attempt` until it succeeds or `requestTimeoutMs` has passed, with
   * backoff. For the kills that follow a broken link: the link that just
   * failed may fail once more, and nothing else will end the command.
   */
  private async persist(attempt: (timeoutMs: number) => Promise<void>): Promise<void> {
    const deadline = performance.now() + this.settings.requestTimeoutMs;
    for (let n = 0; ; n++) {
      try {
        await attempt(Math.max(1, Math.round(deadline - performance.now())));
        return;
      } catch (error) {
        const left = deadline - performance.now();
        if (left <= 0) throw error;
        await new Promise((resolve) => setTimeout(resolve, Math.min(left, 50 * 2 ** n)));
      }
    }
  }

  /** SIGKILL to the group, repeated while the request fails (see {@link persist}). */
  private killGroup(): Promise<void> {
    return this.persist(() => this.signalGroup('SIGKILL'));
  }

  /**
   * Finds the command by its tag and SIGKILLs its group: after a start
   * whose outcome is unknown nothing else can find it (see {@link persist}).
   */
  private killByTag(): Promise<void> {
    return this.persist(async (timeoutMs) => {
      const { processes } = await this.settings.client.list({}, { timeoutMs, headers: this.auth });
      const found = processes.find((info) => info.tag === this.tag);
      if (found === undefined) return;
      this.pid = found.pid;
      await this.signalGroup('SIGKILL');
    });
  }

  private async signalGroup(signal: Signal): Promise<void> {
    if (this.pid === undefined) return;
    await this.helper(['-c', SIGNAL, 'sandstream-signal', signal.slice(3), String(this.pid), this.leaderStart]);
  }

  async signal(signal: Signal): Promise<void> {
    try {
      await this.signalGroup(signal);
    } catch (error) {
      throw new TransportError(`could not deliver ${signal} to command ${this.pid}: ${describe(error)}`, { cause: error });
    }
  }

  async writeStdin(data: Uint8Array): Promise<void> {
    const pid = this.pid!;
    for (let offset = 0; offset < data.byteLength || offset === 0; offset += STDIN_CHUNK) {
      const part = data.subarray(offset, offset + STDIN_CHUNK);
      try {
        await this.settings.client.sendInput(
          { process: { selector: { case: 'pid', value: pid } }, input: { input: { case: 'stdin', value: part } } },
          { headers: this.auth },
        );
      } catch (error) {
        // envd answers NotFound once the command is gone and Internal when
        // the pipe is closed or the command stopped reading: nothing of this
        // request was delivered. Anything else leaves delivery uncertain, and
        // a write is never sent twice.
        if (isDaemonAnswer(error) && (error.code === Code.NotFound || error.code === Code.Internal)) {
          throw new StdinClosed(`standard input is closed: ${error.rawMessage}`, { cause: error });
        }
        throw new TransportError(`the delivery of ${data.byteLength} bytes of standard input is uncertain: ${describe(error)}`, {
          cause: error,
        });
      }
      if (data.byteLength === 0) break;
    }
  }

  async closeStdin(): Promise<void> {
    try {
      await this.settings.client.closeStdin({ process: { selector: { case: 'pid', value: this.pid! } } }, { headers: this.auth });
    } catch (error) {
      // Gone or already closed: closed either way.
      if (isDaemonAnswer(error)) return;
      throw new TransportError(`could not close standard input of command ${this.pid}: ${describe(error)}`, { cause: error });
    }
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    const waiter = this.resumeWaiter;
    this.resumeWaiter = undefined;
    waiter?.();
  }

  async release(): Promise<void> {
    // Released before this driver reported an end: the runtime gave up on
    // the command (its own TransportError), possibly while the start was
    // still pending. End what may have started, best effort and bounded.
    const abandoned = !this.terminal;
    this.released = true;
    this.terminal = true;
    clearTimeout(this.settleTimer);
    this.resume();
    for (const controller of this.controllers) controller.abort();
    this.controllers.clear();
    if (abandoned) {
      await (this.pid !== undefined ? this.killGroup() : this.killByTag()).catch(() => undefined);
    }
    await this.unblocking;
    if (this.leftovers) await this.removeLeftovers().catch(() => undefined);
  }

  private relayTag(): string {
    return `${this.tag}-relay`;
  }

  /**
   * After an end that did not come through the relay (a broken link, a
   * start refused or abandoned): ends the relay, which may wait for a
   * writer or a group forever, and removes the FIFO directory. Best effort,
   * bounded (see {@link persist}); the command's tree is already killed.
   */
  private async removeLeftovers(): Promise<void> {
    // The directory goes even when the relay could not be ended: a relay that waits on
    // its FIFOs is unblocked by the same helper.
    if (this.relayStarted) {
      await this.persist(async (timeoutMs) => {
        let pid = this.relayPid;
        if (pid === undefined) {
          const { processes } = await this.settings.client.list({}, { timeoutMs, headers: this.auth });
          pid = processes.find((info) => info.tag === this.relayTag())?.pid;
          if (pid === undefined) return;
        }
        try {
          await this.settings.client.sendSignal(
            { process: { selector: { case: 'pid', value: pid } }, signal: EnvdSignal.SIGKILL },
            { timeoutMs, headers: this.auth },
          );
        } catch (error) {
          // Gone already: envd no longer knows the pid.
          if (!(isDaemonAnswer(error) && error.code === Code.NotFound)) throw error;
        }
      }).catch(() => undefined);
    }
    await this.persist(() => this.helper(['-c', UNBLOCK, 'sandstream-unblock', this.dir]));
    this.leftovers = false;
  }
}
