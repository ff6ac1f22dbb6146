/**
 * The worker thread that owns the testee's pipes (ADR-0038). The kit's main
 * thread blocks on the requests that must answer synchronously (`stream`,
 * `props`, `iterate`); while it blocks, this thread goes on reading the
 * testee, hands the main thread its answer through a port of its own, and
 * wakes it through a shared word. It also watches the testee: a malformed
 * line, an answer to an unknown id, an exit, or a silence with requests
 * pending is reported as fatal, never left to hang the run.
 *
 * The body runs as an `eval` worker (so it works from the built package and
 * from the sources alike): it must not use anything from its module's scope.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker, type MessagePort } from 'node:worker_threads';

/** What the worker is started with. */
export interface LinkWorkerData {
  readonly command: string;
  readonly args: readonly string[] | undefined;
  readonly cwd: string | undefined;
  readonly env: Readonly<Record<string, string>> | undefined;
  /** Whether the testee's standard error is passed on to the kit's. */
  readonly forwardStderr: boolean;
  /** Word 0: set to 1 once a synchronous answer waits on the sync port. */
  readonly flag: SharedArrayBuffer;
  readonly syncPort: MessagePort;
}

/** What the worker body is given besides {@link LinkWorkerData}. */
interface WorkerStart extends LinkWorkerData {
  /**
   * The URL of `@sandstream/types/runtime`, whose process-table reader finds
   * what the testee left: resolved here, since an eval worker resolves
   * nothing from this module's place, and imported there (it is ESM only).
   */
  readonly processTable: string;
}

/** Messages from the main thread. */
export type ToWorker =
  | { readonly kind: 'send'; readonly id: string; readonly op: string; readonly line: string; readonly sync: boolean; readonly settle?: string }
  | { readonly kind: 'silence'; readonly ms: number }
  | { readonly kind: 'shutdown'; readonly graceMs: number };

/** Messages to the main thread (the sync port carries only `line` and `fatal`). */
export type FromWorker =
  | { readonly kind: 'line'; readonly message: Record<string, unknown> }
  | { readonly kind: 'fatal'; readonly message: string }
  | { readonly kind: 'ended'; readonly how: string };

/**
 * Defined by the worker's script before its body (see {@link startLinkWorker}): written in a
 * string, so that a test runner that rewrites `import()` in this module's source (Vitest does)
 * leaves it alone; the body itself could not use the rewritten form.
 */
declare const importProcessTable: (url: string) => Promise<typeof import('@sandstream/types/runtime')>;

/* eslint-disable @typescript-eslint/no-require-imports -- an eval worker has require(), not import */
function linkWorker(): void {
  const { parentPort, workerData } = require('node:worker_threads') as typeof import('node:worker_threads');
  const { spawn } = require('node:child_process') as typeof import('node:child_process');
  const { createInterface } = require('node:readline') as typeof import('node:readline');
  const data = workerData as WorkerStart;
  // Loaded from the start, so it is there by the time the testee has ended.
  const processTable = importProcessTable(data.processTable);
  // A failure is reported when the sweep needs it, not as an unhandled rejection before.
  processTable.catch(() => undefined);
  const flag = new Int32Array(data.flag);
  const port = parentPort!;
  const pending = new Map<string, { op: string; sync: boolean; settle?: string }>();
  let fatal: string | undefined;
  let stderrTail = '';
  let lastLine = performance.now();
  let ping: { id: string; at: number } | undefined;
  let silenceMs = 10_000;
  let shuttingDown = false;
  let byeSent = false;
  let exited: string | undefined;

  const { randomUUID } = require('node:crypto') as typeof import('node:crypto');
  // Every process of the testee's tree inherits this variable, so what the testee leaves (commands
  // that outlived a crash, in sessions of their own) is found at the end, where a group kill misses it.
  const mark = randomUUID();
  const child = spawn(data.command, data.args === undefined ? [] : [...data.args], {
    cwd: data.cwd,
    env: { ...(data.env ?? process.env), SANDSTREAM_TESTEE_RUN: mark },
    shell: data.args === undefined,
    // A process group of its own, so the whole testee tree can be ended at once.
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const wakeSync = (message: FromWorker): void => {
    data.syncPort.postMessage(message);
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
  };
  const fail = (message: string): void => {
    if (fatal !== undefined || shuttingDown) return;
    const tail = stderrTail.trim();
    fatal = tail === '' ? message : `${message}; its standard error ended with: ${tail.slice(-600)}`;
    port.postMessage({ kind: 'fatal', message: fatal } satisfies FromWorker);
    // A main thread blocked on an answer wakes with the fault instead.
    if ([...pending.values()].some((p) => p.sync)) wakeSync({ kind: 'fatal', message: fatal });
  };
  const describePending = (): string => [...new Set([...pending.values()].map((p) => p.op))].join(', ');

  child.stderr!.on('data', (chunk: Buffer) => {
    stderrTail = (stderrTail + chunk.toString('utf8')).slice(-4096);
    if (data.forwardStderr) process.stderr.write(chunk);
  });
  child.stdin!.on('error', () => undefined);
  child.on('error', (error) => fail(`the testee could not be started: ${error.message}`));
  const lines = createInterface({ input: child.stdout!, crlfDelay: Infinity });
  lines.on('line', (line) => {
    lastLine = performance.now();
    if (fatal !== undefined || line.trim() === '') return;
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(line) as Record<string, unknown>;
      if (typeof message !== 'object' || message === null || Array.isArray(message)) throw new Error('not an object');
    } catch {
      return fail(`the testee wrote a line that is not a JSON object: ${JSON.stringify(line.slice(0, 200))}`);
    }
    if (typeof message['call'] === 'string') {
      if (!Array.isArray(message['args'])) return fail(`the testee wrote a call without args: ${line.slice(0, 200)}`);
      port.postMessage({ kind: 'line', message } satisfies FromWorker);
      return;
    }
    if (message['fault'] !== undefined) {
      if (typeof message['fault'] !== 'object' || !Array.isArray(message['requests'])) return fail(`the testee wrote a malformed fault: ${line.slice(0, 200)}`);
      port.postMessage({ kind: 'line', message } satisfies FromWorker);
      return;
    }
    const id = message['id'];
    if (typeof id !== 'string' || typeof message['ok'] !== 'boolean') return fail(`the testee wrote a line that is neither an answer nor a call: ${line.slice(0, 200)}`);
    if (ping !== undefined && id === ping.id) {
      ping = undefined;
      return;
    }
    const request = pending.get(id);
    if (request === undefined) return fail(`the testee answered an unknown id ${JSON.stringify(id)}: ${line.slice(0, 200)}`);
    if (message['ok'] === false && (typeof message['error'] !== 'object' || message['error'] === null)) return fail(`the testee answered ${request.op} ${id} with ok: false and no error object`);
    pending.delete(id);
    // A two-step call that threw at once has nothing left to settle.
    if (request.settle !== undefined && message['ok'] === false) pending.delete(request.settle);
    if (request.sync) wakeSync({ kind: 'line', message });
    else port.postMessage({ kind: 'line', message } satisfies FromWorker);
  });
  child.on('exit', (code, signal) => {
    const how = signal === null ? `exit status ${code}` : `signal ${signal}`;
    // After a bye the testee ends by itself, maybe before the main thread asks for the shutdown.
    if (!shuttingDown && !byeSent) fail(`the testee exited (${how})${pending.size > 0 ? ` with ${pending.size} request(s) unanswered (${describePending()})` : ''}`);
    lines.close();
    exited = how;
  });

  // Silence: with requests pending and no line for a while, the testee is asked for a ping; no answer is fatal.
  const watch = setInterval(() => {
    const now = performance.now();
    if (ping !== undefined && now - ping.at > silenceMs) {
      fail(`the testee stopped answering: no line for ${Math.round(now - lastLine)} ms, ${pending.size} request(s) pending (${describePending()}), and no answer to a ping`);
    } else if (ping === undefined && pending.size > 0 && now - lastLine > silenceMs / 2) {
      ping = { id: `ping-${Math.round(now)}`, at: now };
      child.stdin!.write(`${JSON.stringify({ id: ping.id, op: 'ping' })}\n`);
    }
  }, 250);
  watch.unref();

  const killGroup = (signal: NodeJS.Signals): void => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // the group is gone
    }
  };
  port.on('message', (message: ToWorker) => {
    if (message.kind === 'silence') {
      silenceMs = message.ms;
    } else if (message.kind === 'send') {
      if (fatal !== undefined) {
        if (message.sync) wakeSync({ kind: 'fatal', message: fatal });
        else port.postMessage({ kind: 'fatal', message: fatal } satisfies FromWorker);
        return;
      }
      if (message.op === 'bye') byeSent = true;
      pending.set(message.id, { op: message.op, sync: message.sync, ...(message.settle === undefined ? {} : { settle: message.settle }) });
      if (message.settle !== undefined) pending.set(message.settle, { op: message.op, sync: false });
      child.stdin!.write(`${message.line}\n`);
    } else if (message.kind === 'shutdown') {
      shuttingDown = true;
      clearInterval(watch);
      const finish = (): void => {
        // Whatever the testee left in its group goes with it, and so does the rest of its tree.
        killGroup('SIGKILL');
        const ended = (): void => port.postMessage({ kind: 'ended', how: exited ?? 'ended' } satisfies FromWorker);
        processTable.then(sweepTree).then(ended, (error: unknown) => {
          port.postMessage({ kind: 'fatal', message: `what the testee left could not be looked for: ${String(error)}` } satisfies FromWorker);
          ended();
        });
      };
      if (exited !== undefined || child.exitCode !== null || child.signalCode !== null) return finish();
      child.stdin!.end();
      // Standard input closed, then SIGTERM, then SIGKILL to the testee's whole group.
      const term = setTimeout(() => killGroup('SIGTERM'), message.graceMs);
      const kill = setTimeout(() => killGroup('SIGKILL'), message.graceMs + 2_000);
      child.once('exit', () => {
        clearTimeout(term);
        clearTimeout(kill);
        finish();
      });
    }
  });

  /** SIGKILLs every process that carries this testee's mark, until a scan finds none. */
  function sweepTree({ markedProcesses, signalEach }: typeof import('@sandstream/types/runtime')): void {
    const nap = new Int32Array(new SharedArrayBuffer(4));
    for (let round = 0; round < 40; round++) {
      const left = markedProcesses('SANDSTREAM_TESTEE_RUN', mark).map((found) => found.pid);
      if (left.length === 0) return;
      signalEach(left);
      // This thread has nothing else to do: block until the next scan.
      Atomics.wait(nap, 0, 0, 25);
    }
  }
}
/* eslint-enable @typescript-eslint/no-require-imports */

/** Starts the worker that owns a testee's pipes. */
export function startLinkWorker(data: LinkWorkerData): Worker {
  const processTable = pathToFileURL(createRequire(import.meta.url).resolve('@sandstream/types/runtime')).href;
  const workerData: WorkerStart = { ...data, processTable };
  const script = `const importProcessTable = (url) => import(url);\n(${linkWorker.toString()})()`;
  return new Worker(script, { eval: true, workerData, transferList: [data.syncPort as never] });
}
