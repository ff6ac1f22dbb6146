/**
 * A local emulator of the Vercel Sandbox REST API, as `@vercel/sandbox`
 * 3.5.0 calls it: a `node:http` server on 127.0.0.1 (random port) whose
 * commands are real local processes, plus a `fetch` that routes the SDK's
 * requests to it. Test infrastructure, built on the emulator kit
 * (`@sandstream/remote/emulator`): it records every request, holds each for
 * a settable latency, takes the kit's faults and exposes its process table.
 * `packages/remote/EMULATORS.md` says what it reproduces of the service,
 * and how strictly.
 *
 * @example
 * ```ts
 * import { Sandbox } from '@vercel/sandbox';
 * import { VercelEmulator } from '@sandstream/adapter-vercel/emulator';
 * await using emulator = await VercelEmulator.start();
 * const sandbox = await Sandbox.create({ ...emulator.credentials, fetch: emulator.fetch });
 * const done = await sandbox.runCommand('echo', ['hi']);
 * console.log(await done.stdout()); // "hi\n"
 * ```
 *
 * @packageDocumentation
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { emulatorFetch } from './fetch.js';
import { closeServer, Connections, FaultQueue, listenLocal, makeRecordArea, RequestRecorder, taggedProcesses, type RecordArea, type TaggedProcess } from '@sandstream/remote/emulator';
import { OutputStore } from './output-store.js';
import { scanProcesses, type EmulatedProcess } from './proc.js';
import { handle, TOKEN } from './server.js';
import { stopSession } from './sessions.js';
import type { VercelState } from './state.js';
import type { EmulatorOptions, Fault, RecordedRequest, StartedCommand, VercelRoute } from './types.js';

export type { EmulatedProcess } from './proc.js';
export { COMMAND_VARIABLE, SESSION_VARIABLE } from './proc.js';
export type { EmulatorOptions, Fault, RecordedRequest, StartedCommand, VercelRoute } from './types.js';

/**
 * The emulator. {@link VercelEmulator.start} listens; {@link close} kills
 * every process it started and stops listening.
 */
export { emulatorFetch } from './fetch.js';

export class VercelEmulator {
  /** Every request received, in arrival order (none with `recordRequests: false`). */
  readonly requests: readonly RecordedRequest[];
  /** What `Sandbox.create()` needs besides `fetch`: token, team id and project id. */
  readonly credentials = { token: TOKEN, teamId: 'team_emulator', projectId: 'prj_emulator' } as const;
  /** A `fetch` that sends the SDK's requests (to its hard-coded base URL) here instead. */
  readonly fetch: typeof globalThis.fetch;
  /**
   * The `recordBase` for every adapter handle on this emulator: a directory of the emulator's
   * own (removed at close), since its commands share the host's `/tmp` and a real sandbox's is
   * its own. Handles on one emulator must all use it to see each other's background commands.
   */
  readonly recordBase: string;

  private readonly records: RecordArea = makeRecordArea('vercel');
  private readonly state: VercelState;
  private readonly connections: Connections;
  private closed: Promise<void> | undefined;

  private constructor(
    private readonly server: Server,
    /** `http://127.0.0.1:<port>`. */
    readonly url: string,
    options: EmulatorOptions,
    cwd: string,
    private readonly ownsCwd: boolean,
  ) {
    this.state = {
      options,
      cwd,
      sessions: new Map(),
      liveLogs: new Map(),
      output: new OutputStore(),
      recorder: new RequestRecorder<VercelRoute>({ keep: options.recordRequests ?? true, latencyMs: options.latencyMs ?? 0 }),
      faults: new FaultQueue<VercelRoute>(),
    };
    this.requests = this.state.recorder.requests;
    this.recordBase = this.records.recordBase;
    this.fetch = emulatorFetch(url);
    this.connections = new Connections(server);
    server.on('request', (req, res) => void handle(this.state, url, req, res));
  }

  /** Starts an emulator on 127.0.0.1 with a random port. */
  static async start(options: EmulatorOptions = {}): Promise<VercelEmulator> {
    const server = createServer({ keepAliveTimeout: 5_000 });
    const port = await listenLocal(server);
    const ownsCwd = options.cwd === undefined;
    const cwd = options.cwd ?? mkdtempSync(join(tmpdir(), 'vercel-emulator-'));
    return new VercelEmulator(server, `http://127.0.0.1:${port}`, options, resolve(cwd), ownsCwd);
  }

  /** Delay before each request is handled, in ms; settable between phases of a bench. */
  get latencyMs(): number {
    return this.state.recorder.latencyMs;
  }

  set latencyMs(ms: number) {
    this.state.recorder.latencyMs = ms;
  }

  /** How many requests arrived per route, kept or not. */
  requestCounts(): Record<string, number> {
    return this.state.recorder.counts();
  }

  /** Adds a fault (see {@link Fault}); it applies to the next matching requests. */
  inject(fault: Fault): void {
    this.state.faults.inject(fault);
  }

  /** Faults added that have not struck yet. */
  pendingFaults(): Fault[] {
    return this.state.faults.pending();
  }

  /** Removes every pending fault. */
  clearFaults(): void {
    this.state.faults.clear();
  }

  /**
   * Breaks the log streams of a command (or of every command) that are open
   * right now, as a network fault in the middle of a live stream would.
   * Returns how many were broken.
   */
  breakLogStreams(cmdId?: string): number {
    let broken = 0;
    for (const [id, sinks] of this.state.liveLogs) {
      if (cmdId !== undefined && id !== cmdId) continue;
      for (const sink of sinks) {
        sink.destroy();
        broken++;
      }
      sinks.clear();
    }
    return broken;
  }

  /**
   * The process table: every live process of this emulator's sandboxes (or
   * of one session), found by the tag the emulator puts in each command's
   * environment, so descendants that left the process group are listed too.
   */
  processes(sessionId?: string): EmulatedProcess[] {
    return scanProcesses(sessionId).filter((p) => this.state.sessions.has(p.sessionId));
  }

  /** Live processes tagged `SANDSTREAM_COMMAND=<id>` (ADR-0033), wherever they moved in the tree. */
  tagged(id: string): TaggedProcess[] {
    return taggedProcesses(id);
  }

  /**
   * Every command the service started (ended ones included), in start
   * order: what a request log cannot tell, since a start refused by a fault
   * is logged but never ran.
   */
  commands(sessionId?: string): StartedCommand[] {
    const all: StartedCommand[] = [];
    for (const session of this.state.sessions.values()) {
      if (sessionId !== undefined && session.id !== sessionId) continue;
      for (const c of session.commands.values()) {
        all.push({ id: c.id, sessionId: c.sessionId, name: c.name, args: c.args, env: c.env, startedAt: c.startedAt, exitCode: c.exitCode });
      }
    }
    return all.sort((a, b) => a.startedAt - b.startedAt);
  }

  /** Ids of the sessions created so far. */
  sessionIds(): string[] {
    return [...this.state.sessions.keys()];
  }

  /** Kills every process of every emulated sandbox and stops listening. */
  close(): Promise<void> {
    this.closed ??= (async () => {
      for (const session of this.state.sessions.values()) await stopSession(session);
      await closeServer(this.server, this.connections);
      this.state.output.close();
      if (this.ownsCwd) rmSync(this.state.cwd, { recursive: true, force: true });
      this.records.remove();
    })();
    return this.closed;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
