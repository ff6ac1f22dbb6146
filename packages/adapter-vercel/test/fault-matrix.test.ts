/**
 * Faults at the wire, as a matrix: each phase of a command's life over the
 * Vercel Sandbox API (the start's answer, the log stream mid-way, the
 * waiting read that carries the exit, a kill, a stdin write) × each way
 * the link or a proxy in front of the service fails (connection reset, 5xx
 * with and without a JSON error body, 429 with Retry-After, slow response
 * headers within and past the bound that applies, an answer cut in the
 * middle). One test per cell; each asserts that the call settles within a
 * bound scaled by a measured round trip, with the exact output or a typed
 * error, that the command was started at most once, that no output is
 * repeated, and that after teardown nothing carrying the cell's marker is
 * alive. The matrix is printed at the end.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandstreamError, type ExecResult, type Process, type Sandbox } from '@sandstream/types';
import { markedProcesses } from '@sandstream/test-support/processes';
import type { Fault, RecordedRequest } from '../src/emulator/index.js';
import { retryAfterMs } from '../src/api.js';
import { createVercelSandbox } from '../src/index.js';
import { until, useEmulator, within } from './helpers.js';

const emulator = useEmulator();

const RUN_ID = `${process.pid}-${Date.now()}`;
/** Every command of a cell carries `CELL_VAR=<run>:<cell>`: the request log and a host scan find it by that. */
const CELL_VAR = 'SANDSTREAM_FAULT_CELL';
const GRACE_MS = 300;
const KILL_WAIT_MS = 2_000;
/**
 * The cell whose start is answered too late: the caller's timeout is the
 * only bound on a start, and the runtime then waits grace + kill wait for
 * the start to be confirmed before it gives the command up.
 */
const CALLER_TIMEOUT_MS = 800;
const LATE_KILL_WAIT_MS = 700;
const LATE_START_MS = CALLER_TIMEOUT_MS + GRACE_MS + LATE_KILL_WAIT_MS + 1_000;

type Phase = 'before-start-event' | 'mid-stream' | 'before-end-event' | 'during-kill' | 'during-stdin-write';
type FaultName =
  | 'reset'
  | '503+error-body'
  | '500-bare'
  | '429+retry-after'
  | 'slow-headers<bound'
  | 'slow-headers>bound'
  | 'truncated-frame'
  | 'cut-at-boundary';
type Expected = 'result' | 'TransportError';

interface Cell {
  readonly phase: Phase;
  readonly fault: FaultName;
  /** The faults, or why the cell does not apply to this backend. */
  readonly inject: readonly Fault[] | { readonly notApplicable: string };
  readonly expect: Expected;
  /** Time the fault itself adds (an injected delay, a bound that must elapse). */
  readonly extraMs: number;
  /** The caller's `timeout` for the command, when the cell needs one. */
  readonly timeout?: number;
  /** The sandbox's kill wait, when the cell needs a shorter one. */
  readonly killWaitMs?: number;
}

const PHASES: readonly Phase[] = ['before-start-event', 'mid-stream', 'before-end-event', 'during-kill', 'during-stdin-write'];
const FAULTS: readonly FaultName[] = [
  'reset',
  '503+error-body',
  '500-bare',
  '429+retry-after',
  'slow-headers<bound',
  'slow-headers>bound',
  'truncated-frame',
  'cut-at-boundary',
];

const bodyOf = (request: RecordedRequest): { env?: Record<string, string>; args?: string[] } =>
  (request.body ?? {}) as { env?: Record<string, string>; args?: string[] };
/** The start of the cell's command, by its marker. */
const startOf = (mark: string): Pick<Fault & { kind: 'status' }, 'method' | 'path' | 'match'> => ({
  method: 'POST',
  path: /\/cmd$/,
  match: (request) => bodyOf(request).env?.[CELL_VAR] === mark,
});
/** The waiting read that answers the command's exit (the only one a cell makes). */
const WAIT_READ = { method: 'GET', path: /\/cmd\/[^/]+$/, match: (request: RecordedRequest) => request.query['wait'] === 'true' } as const;
/** The helper command that sends `action` to the command's tree. */
const TREE_HELPER = (action: string) =>
  ({
    method: 'POST',
    path: /\/cmd$/,
    match: (request: RecordedRequest) => {
      const args = bodyOf(request).args ?? [];
      return args.includes('sandstream-tree') && args.at(-1) === action;
    },
  }) as const;
/** The helper command that delivers kill(): SIGTERM to the command's tree. */
const TERM_HELPER = TREE_HELPER('TERM');
/** A rate limiter: every matching request is refused for a second, each told to come back in one. */
const RATE_LIMITED = { retryAfter: 1, forMs: 1_000 } as const;
/**
 * The same for two seconds: longer than the whole fixed backoff of the
 * stdin writer's resends (about 1.1 s), so only a writer that honours
 * Retry-After gets through.
 */
const RATE_LIMITED_LONG = { retryAfter: 2, forMs: 2_000 } as const;
/** The third of five stdin writes (the probe and two writes went before). */
const STDIN = { method: 'POST', path: /\/stdin$/ } as const;
/** Cuts the live log stream part way, in the middle of a record. */
const CUT_LOGS: Fault = { kind: 'drop-logs', afterBytes: 600 };
/** The log request that reopens the stream after the cut. */
const REOPEN = { method: 'GET', path: /\/logs$/, skip: 1 } as const;

const ONE_DOCUMENT = 'this answer is one JSON document, not a stream of records: a cut answer is the truncated-frame cell';
const NO_BOUND_LOGS =
  'no bound applies to a log stream: its headers may come late and its records later still (a quiet command), so a slow answer is only slow (see slow-headers<bound); the caller\'s timeout bounds the command';

function cellsFor(cell: (phase: Phase, fault: FaultName) => string): Cell[] {
  const cells: Cell[] = [];
  const add = (phase: Phase, fault: FaultName, inject: Cell['inject'], expected: Expected, extraMs = 0, extra: Partial<Cell> = {}): void =>
    void cells.push({ phase, fault, inject, expect: expected, extraMs, ...extra });
  for (const phase of PHASES) {
    for (const fault of FAULTS) {
      const mark = cell(phase, fault);
      switch (phase) {
        case 'before-start-event': {
          // The start's answer carries the command id, this backend's start event.
          const m = startOf(mark);
          if (fault === 'reset') add(phase, fault, [{ kind: 'reset', when: 'after', ...m }], 'TransportError');
          if (fault === '503+error-body') add(phase, fault, [{ kind: 'status', status: 503, when: 'after', ...m }], 'TransportError');
          if (fault === '500-bare') add(phase, fault, [{ kind: 'status', status: 500, body: 'text', when: 'after', ...m }], 'TransportError');
          // A rate limiter refuses before the service: nothing starts.
          if (fault === '429+retry-after') add(phase, fault, [{ kind: 'status', status: 429, ...RATE_LIMITED, ...m }], 'TransportError');
          if (fault === 'slow-headers<bound') add(phase, fault, [{ kind: 'delay-headers', ms: 500, ...m }], 'result', 500);
          // No bound of the adapter's own: the caller's timeout gives up on the start, and the late copy is swept.
          if (fault === 'slow-headers>bound') {
            add(phase, fault, [{ kind: 'delay-headers', ms: LATE_START_MS, ...m }], 'TransportError', LATE_START_MS, {
              timeout: CALLER_TIMEOUT_MS,
              killWaitMs: LATE_KILL_WAIT_MS,
            });
          }
          if (fault === 'truncated-frame') add(phase, fault, [{ kind: 'truncate', ...m }], 'TransportError');
          if (fault === 'cut-at-boundary') add(phase, fault, { notApplicable: ONE_DOCUMENT }, 'result');
          break;
        }
        case 'mid-stream': {
          // The log stream is cut part way; a status or a slow answer meets its reopening (it cannot follow headers already sent).
          if (fault === 'reset') add(phase, fault, [CUT_LOGS], 'result');
          if (fault === '503+error-body') add(phase, fault, [CUT_LOGS, { kind: 'status', status: 503, ...REOPEN }], 'result');
          if (fault === '500-bare') add(phase, fault, [CUT_LOGS, { kind: 'status', status: 500, body: 'text', ...REOPEN }], 'result');
          if (fault === '429+retry-after') add(phase, fault, [CUT_LOGS, { kind: 'status', status: 429, ...RATE_LIMITED, ...REOPEN }], 'result', 1_000);
          if (fault === 'slow-headers<bound') add(phase, fault, [CUT_LOGS, { kind: 'delay-headers', ms: 500, ...REOPEN }], 'result', 500);
          if (fault === 'slow-headers>bound') add(phase, fault, { notApplicable: NO_BOUND_LOGS }, 'result');
          // A record cut in the middle, then a clean end of the response.
          if (fault === 'truncated-frame') add(phase, fault, [{ ...CUT_LOGS, close: 'end' } as Fault], 'result');
          // Whole records only, then a clean end while the command still writes.
          if (fault === 'cut-at-boundary') add(phase, fault, [{ ...CUT_LOGS, close: 'end', cut: 'boundary' } as Fault], 'result');
          break;
        }
        case 'before-end-event': {
          // The waiting read that carries the exit: served (the command ended), its answer lost.
          if (fault === 'reset') add(phase, fault, [{ kind: 'reset', when: 'after', ...WAIT_READ }], 'result');
          if (fault === '503+error-body') add(phase, fault, [{ kind: 'status', status: 503, when: 'after', ...WAIT_READ }], 'result');
          if (fault === '500-bare') add(phase, fault, [{ kind: 'status', status: 500, body: 'text', when: 'after', ...WAIT_READ }], 'result');
          if (fault === '429+retry-after') add(phase, fault, [{ kind: 'status', status: 429, ...RATE_LIMITED, ...WAIT_READ }], 'result', 1_000);
          if (fault === 'slow-headers<bound') add(phase, fault, [{ kind: 'delay-headers', ms: 500, ...WAIT_READ }], 'result', 500);
          if (fault === 'slow-headers>bound') {
            add(phase, fault, { notApplicable: 'no bound applies to the waiting read: it is answered when the command ends, however long that takes (see slow-headers<bound)' }, 'result');
          }
          if (fault === 'truncated-frame') add(phase, fault, [{ kind: 'truncate', ...WAIT_READ }], 'result');
          if (fault === 'cut-at-boundary') add(phase, fault, { notApplicable: ONE_DOCUMENT }, 'result');
          break;
        }
        case 'during-kill': {
          // The helper is idempotent, so a lost or refused answer may be retried.
          if (fault === 'reset') add(phase, fault, [{ kind: 'reset', ...TERM_HELPER }], 'result');
          if (fault === '503+error-body') add(phase, fault, [{ kind: 'status', status: 503, ...TERM_HELPER }], 'result');
          if (fault === '500-bare') add(phase, fault, [{ kind: 'status', status: 500, body: 'text', ...TERM_HELPER }], 'result');
          if (fault === '429+retry-after') add(phase, fault, [{ kind: 'status', status: 429, ...RATE_LIMITED, ...TERM_HELPER }], 'result', 1_000);
          if (fault === 'slow-headers<bound') add(phase, fault, [{ kind: 'delay-headers', ms: KILL_WAIT_MS / 4, ...TERM_HELPER }], 'result', KILL_WAIT_MS / 4);
          // kill() waits killWaitMs for the backend to confirm the signal.
          if (fault === 'slow-headers>bound') {
            add(phase, fault, [{ kind: 'delay-headers', ms: KILL_WAIT_MS * 2, ...TERM_HELPER }], 'TransportError', KILL_WAIT_MS * 2);
          }
          // The helper ran; its answer is cut after the SDK's retries would apply.
          if (fault === 'truncated-frame') add(phase, fault, [{ kind: 'truncate', ...TERM_HELPER }], 'TransportError');
          // The helper's attached stream ends cleanly without its last record (the finished command).
          if (fault === 'cut-at-boundary') add(phase, fault, [{ kind: 'truncate', boundary: true, ...TERM_HELPER }], 'TransportError');
          break;
        }
        case 'during-stdin-write': {
          // Writes carry the confirmed offset: a resend is harmless.
          if (fault === 'reset') add(phase, fault, [{ kind: 'reset', when: 'after', ...STDIN }], 'result');
          if (fault === '503+error-body') add(phase, fault, [{ kind: 'status', status: 503, when: 'after', ...STDIN }], 'result');
          // Resent are network errors, 429, 502 and 503 (ADR-0027); a 500 is an uncertain write.
          if (fault === '500-bare') add(phase, fault, [{ kind: 'status', status: 500, body: 'text', when: 'after', ...STDIN }], 'TransportError');
          if (fault === '429+retry-after') add(phase, fault, [{ kind: 'status', status: 429, ...RATE_LIMITED_LONG, ...STDIN }], 'result', 2_000);
          if (fault === 'slow-headers<bound') add(phase, fault, [{ kind: 'delay-headers', ms: 500, ...STDIN }], 'result', 500);
          if (fault === 'slow-headers>bound') {
            add(phase, fault, { notApplicable: 'no bound applies to a stdin write: the service answers once the bytes are in the pipe, which a slow reader delays legitimately (see slow-headers<bound)' }, 'result');
          }
          if (fault === 'truncated-frame') add(phase, fault, [{ kind: 'truncate', ...STDIN }], 'result');
          if (fault === 'cut-at-boundary') add(phase, fault, { notApplicable: ONE_DOCUMENT }, 'result');
          break;
        }
      }
    }
  }
  return cells;
}

const cellId = (phase: Phase, fault: FaultName): string => `${RUN_ID}:${phase}:${fault}`;
const CELLS = cellsFor(cellId);

const BURSTS = 6;
const PER_BURST = 50;
/**
 * Numbered lines in bursts, and a member that outlives them: the command
 * never ends by itself, so a cell proves that the adapter ended its tree
 * (after a correct result, the runtime's wind-down of what the leader left;
 * after a broken link, the adapter's kill).
 */
const OUTPUT_ARGV = [
  'sh',
  '-c',
  `sleep 60 & i=0; for b in $(seq ${BURSTS}); do seq $((i+1)) $((i+${PER_BURST})); i=$((i+${PER_BURST})); sleep 0.02; done`,
];
const KILL_LINES = 50;
const KILL_ARGV = ['sh', '-c', `seq 1 ${KILL_LINES}; sleep 60 & wait`];
const WRITES = 5;
const PER_WRITE = 20;

function lines(from: number, to: number): string {
  let text = '';
  for (let i = from; i <= to; i++) text += `${i}\n`;
  return text;
}

/** How many numbered lines `text` holds, if it is exactly 1..n (no repeat, no gap, nothing else). */
function sequenceLength(text: string): number {
  if (text === '') return 0;
  expect(text.endsWith('\n'), `output ends mid-line: ${JSON.stringify(text.slice(-20))}`).toBe(true);
  const numbers = text.slice(0, -1).split('\n');
  numbers.forEach((line, index) => expect(line, `line ${index + 1} (a repeat or a gap)`).toBe(String(index + 1)));
  return numbers.length;
}

interface Settled<T> {
  readonly ok: boolean;
  readonly value?: T;
  readonly error?: unknown;
  readonly ms: number;
}

async function settle<T>(promise: Promise<T>, bound: number, what: string): Promise<Settled<T>> {
  const started = performance.now();
  const outcome = await within(
    bound,
    promise.then(
      (value) => ({ ok: true, value }),
      (error: unknown) => ({ ok: false, error }),
    ),
    what,
  );
  return { ...outcome, ms: performance.now() - started };
}

const nameOf = (settled: Settled<unknown>): string => (settled.ok ? 'ok' : ((settled.error as Error)?.constructor?.name ?? String(settled.error)));

async function disposed(proc: Process, bound: number): Promise<void> {
  const outcome = await settle(proc[Symbol.asyncDispose](), bound, 'dispose');
  if (!outcome.ok) expect(outcome.error).toBeInstanceOf(SandstreamError);
}

async function drain(proc: Process, sink: { text: string }): Promise<void> {
  const decoder = new TextDecoder();
  for await (const chunk of proc) if (chunk.stream === 'stdout') sink.text += decoder.decode(chunk.data, { stream: true });
}

let baselineMs = 0;
const rows = new Map<string, { outcome: string; ms: string; starts: string }>();

/**
 * One adapter sandbox per kill wait, shared by the cells: each cell ends its
 * own command and proves its tree gone with the sandbox still running (a
 * sandbox's stop would end everything in it and prove nothing).
 */
const sandboxes = new Map<number, Promise<Sandbox>>();
function adapterSandbox(killWaitMs = KILL_WAIT_MS): Promise<Sandbox> {
  let sandbox = sandboxes.get(killWaitMs);
  if (sandbox === undefined) {
    const emu = emulator();
    sandbox = createVercelSandbox({ ...emu.credentials, fetch: emu.fetch, graceMs: GRACE_MS, killWaitMs });
    sandboxes.set(killWaitMs, sandbox);
  }
  return sandbox;
}

function boundFor(cell: Cell): number {
  return 8 * baselineMs + cell.extraMs + GRACE_MS + KILL_WAIT_MS + 6_000;
}

beforeAll(async () => {
  const sb = await adapterSandbox();
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const started = performance.now();
    const result = await within(30_000, sb.run(OUTPUT_ARGV), 'a run without a fault');
    times.push(performance.now() - started);
    expect(result.stdoutText).toBe(lines(1, BURSTS * PER_BURST));
  }
  times.sort((a, b) => a - b);
  baselineMs = times[1]!;
}, 60_000);

afterAll(async () => {
  for (const sandbox of sandboxes.values()) await (await sandbox).close().catch(() => undefined);
  const names = [...CELLS.map((cell) => `${cell.phase} × ${cell.fault}`), ...COMPOUND.map((c) => c.name)];
  const width = Math.max(...names.map((name) => name.length));
  console.log(
    [
      `vercel fault matrix (round trip without a fault: ${baselineMs.toFixed(0)} ms; ms = time to settle; starts = commands the service started for the cell)`,
      `${'cell'.padEnd(width)}  ${'ms'.padStart(6)}  starts  outcome`,
      ...names.map((name) => {
        const r = rows.get(name) ?? { outcome: 'failed or not run', ms: '-', starts: '-' };
        return `${name.padEnd(width)}  ${r.ms.padStart(6)}  ${r.starts.padStart(6)}  ${r.outcome}`;
      }),
    ].join('\n'),
  );
});

interface Observed {
  outcome: string;
  settledMs: number;
  verdict: string;
}

async function runOutputCell(sb: Sandbox, cell: Cell, mark: string): Promise<Observed> {
  const bound = boundFor(cell);
  const started = performance.now();
  const proc = sb.stream(OUTPUT_ARGV, { env: { [CELL_VAR]: mark }, ...(cell.timeout === undefined ? {} : { timeout: cell.timeout }) });
  const out = { text: '' };
  try {
    const reading = await settle(drain(proc, out), bound, 'reading the output');
    const waited = await settle(proc.wait(), bound, 'wait()');
    const settledMs = performance.now() - started;
    const count = sequenceLength(out.text);
    if (waited.ok) {
      expect(reading.ok).toBe(true);
      expect((waited.value as ExecResult).exitCode).toBe(0);
      expect(count).toBe(BURSTS * PER_BURST);
      return { outcome: `result (exit 0, ${count} lines exact)`, settledMs, verdict: 'result' };
    }
    expect(waited.error).toBeInstanceOf(SandstreamError);
    return { outcome: `${nameOf(waited)} after ${count} lines`, settledMs, verdict: nameOf(waited) };
  } finally {
    await disposed(proc, bound);
  }
}

async function runKillCell(sb: Sandbox, cell: Cell, mark: string): Promise<Observed> {
  const bound = boundFor(cell);
  const proc = sb.stream(KILL_ARGV, { env: { [CELL_VAR]: mark } });
  const out = { text: '' };
  const decoder = new TextDecoder();
  const iterator = proc[Symbol.asyncIterator]();
  try {
    while (!out.text.endsWith(`${KILL_LINES}\n`)) {
      const next = await within(bound, iterator.next(), 'the output before the kill');
      if (next.done) throw new Error('ended before the kill');
      if (next.value.stream === 'stdout') out.text += decoder.decode(next.value.data, { stream: true });
    }
    for (const fault of cell.inject as readonly Fault[]) emulator().inject(fault);
    const started = performance.now();
    const killed = await settle(proc.kill('SIGTERM'), bound, 'kill()');
    const settledMs = performance.now() - started;
    if (killed.ok) {
      const waited = await settle(proc.wait(), bound, 'wait() after kill()');
      expect(waited.ok).toBe(true);
      expect((waited.value as ExecResult).signal).toBe('SIGTERM');
      expect(sequenceLength(out.text + (waited.value as ExecResult).stdoutText)).toBe(KILL_LINES);
      return { outcome: 'kill() ok, ended by SIGTERM', settledMs, verdict: 'result' };
    }
    expect(killed.error).toBeInstanceOf(SandstreamError);
    const disposal = await settle(proc[Symbol.asyncDispose](), bound, 'dispose after a failed kill()');
    const waited = await settle(proc.wait(), bound, 'wait() after dispose');
    const end = waited.ok ? `ended by ${(waited.value as ExecResult).signal ?? `exit ${(waited.value as ExecResult).exitCode}`}` : nameOf(waited);
    return { outcome: `kill() ${nameOf(killed)}; dispose ${nameOf(disposal)}, ${end}`, settledMs, verdict: nameOf(killed) };
  } finally {
    await iterator.return?.();
    await disposed(proc, bound);
  }
}

async function runStdinCell(sb: Sandbox, cell: Cell, mark: string): Promise<Observed> {
  const bound = boundFor(cell);
  const proc = sb.stream(['cat'], { env: { [CELL_VAR]: mark }, stdin: 'pipe' });
  const out = { text: '' };
  const reading = drain(proc, out).catch(() => undefined);
  try {
    await within(bound, proc.started(), 'start');
    let failed: Settled<void> | undefined;
    let settledMs = 0;
    for (let w = 0; w < WRITES; w++) {
      if (w === 2) for (const fault of cell.inject as readonly Fault[]) emulator().inject(fault);
      const write = await settle(proc.stdin!.write(lines(w * PER_WRITE + 1, (w + 1) * PER_WRITE)), bound, `write ${w + 1}`);
      if (w === 2) settledMs = write.ms;
      if (!write.ok) {
        expect(write.error).toBeInstanceOf(SandstreamError);
        failed ??= write;
      } else {
        expect(failed, 'a write succeeded after one failed').toBeUndefined();
      }
    }
    await within(bound, proc.stdin!.end(), 'end()');
    const waited = await settle(proc.wait(), bound, 'wait()');
    await reading;
    const count = sequenceLength(out.text);
    expect(waited.ok).toBe(true);
    expect((waited.value as ExecResult).exitCode).toBe(0);
    if (failed === undefined) {
      expect(count).toBe(WRITES * PER_WRITE);
      return { outcome: `result (${count} lines exact)`, settledMs, verdict: 'result' };
    }
    expect([2 * PER_WRITE, 3 * PER_WRITE]).toContain(count);
    return { outcome: `write 3 ${nameOf(failed)}; ${count} lines, each once`, settledMs, verdict: nameOf(failed) };
  } finally {
    await disposed(proc, bound);
  }
}

/** The start requests of the cell's command. */
function startRequests(mark: string): RecordedRequest[] {
  return emulator().requests.filter((r) => r.method === 'POST' && /\/cmd$/.test(r.path) && bodyOf(r).env?.[CELL_VAR] === mark);
}

/** Live processes of the cell's command: the emulator's table and a host scan. */
function leftovers(mark: string): string[] {
  const inTable = emulator()
    .processes()
    .filter((p) => p.environ.includes(`${CELL_VAR}=${mark}`))
    .map((p) => `${p.pid} ${p.cmdline}`);
  return [...inTable, ...markedProcesses(CELL_VAR, mark).map((p) => `host ${p.pid} ${p.cmdline}`)];
}

/**
 * One cell: the command under the faults, then the checks every cell
 * shares (nothing of it alive with the sandbox still running, one start at
 * most, the faults struck), its row, and its verdict.
 */
async function checkCell(cell: Cell, name: string, mark: string, faults: readonly Fault[]): Promise<void> {
  const sb = await adapterSandbox(cell.killWaitMs);
  let observed: Observed;
  try {
    if (cell.phase === 'during-kill') observed = await runKillCell(sb, cell, mark);
    else if (cell.phase === 'during-stdin-write') observed = await runStdinCell(sb, cell, mark);
    else {
      for (const fault of faults) emulator().inject(fault);
      observed = await runOutputCell(sb, cell, mark);
    }
    // Every start request of the cell is handled before the sandbox goes
    // (one held by slow headers arrives after the caller gave up, and
    // must then be swept by the adapter, not ended by the sandbox's stop).
    await until(() => startRequests(mark).every((r) => r.status !== 0), boundFor(cell), 'the start requests were answered');
    // Disposing the Process ended its tree (or the adapter swept a copy
    // whose start it gave up on), with the sandbox still running.
    await until(() => leftovers(mark).length === 0, boundFor(cell), `processes of ${name} left`).catch(() => {
      expect(leftovers(mark)).toEqual([]);
    });
  } finally {
    // A cell that failed half way leaves nothing running for the next.
    if (leftovers(mark).length > 0) await within(boundFor(cell), sb.close(), 'close()').finally(() => sandboxes.delete(cell.killWaitMs ?? KILL_WAIT_MS));
  }
  const starts = emulator().commands().filter((c) => c.env[CELL_VAR] === mark);
  expect(starts.length).toBeLessThanOrEqual(1);
  // The faults struck (a cell whose fault never fired proves nothing).
  expect(emulator().pendingFaults()).toEqual([]);
  rows.set(name, { outcome: observed.outcome, ms: observed.settledMs.toFixed(0), starts: String(starts.length) });
  expect(observed.settledMs).toBeLessThan(boundFor(cell));
  expect(observed.verdict).toBe(cell.expect);
}

/**
 * Two faults at once: the start's answer lost, then the sweep that must end
 * the copy that did start refused for a while (an outage of the whole API).
 */
const COMPOUND: ReadonlyArray<{ name: string; cell: Cell; faults: (mark: string) => Fault[] }> = [
  {
    name: 'compound: start answer lost × sweep refused (503, 3 s)',
    cell: { phase: 'before-start-event', fault: 'reset', inject: [], expect: 'TransportError', extraMs: 3_000 },
    faults: (mark) => [
      { kind: 'status', status: 503, when: 'after', ...startOf(mark) },
      { kind: 'status', status: 503, forMs: 3_000, ...TREE_HELPER('KILL') },
    ],
  },
  {
    name: 'compound: log error record × sweep refused (503, 3 s)',
    cell: { phase: 'mid-stream', fault: 'reset', inject: [], expect: 'TransportError', extraMs: 3_000 },
    faults: () => [
      { kind: 'error-line', code: 'internal', message: 'log storage failed', afterRecords: 2 },
      { kind: 'status', status: 503, forMs: 3_000, ...TREE_HELPER('KILL') },
    ],
  },
];

describe('vercel: phase × wire fault', () => {
  for (const cell of CELLS) {
    const name = `${cell.phase} × ${cell.fault}`;
    if (!Array.isArray(cell.inject)) {
      const reason = (cell.inject as { notApplicable: string }).notApplicable;
      it.skip(`${name} — skipped: not applicable: ${reason}`, () => undefined);
      rows.set(name, { outcome: `n/a: ${reason}`, ms: '-', starts: '-' });
      continue;
    }
    it(name, () => checkCell(cell, name, cellId(cell.phase, cell.fault), cell.inject as readonly Fault[]), 60_000);
  }
});

describe('vercel: compound faults', () => {
  for (const [index, compound] of COMPOUND.entries()) {
    it(compound.name, () => {
      const mark = `${RUN_ID}:compound-${index}`;
      return checkCell(compound.cell, compound.name, mark, compound.faults(mark));
    }, 60_000);
  }
});

describe('regressions found by the matrix', () => {
  it('Retry-After is read as delta-seconds or an HTTP date, so a stdin resend waits as long as a rate limiter asks (fault-matrix cell during-stdin-write×429+retry-after)', () => {
    const now = Date.parse('2026-11-30T12:00:00Z');
    expect(retryAfterMs('2', now)).toBe(2_000);
    expect(retryAfterMs(' 0 ', now)).toBe(0);
    expect(retryAfterMs('Mon, 30 Nov 2026 12:00:03 GMT', now)).toBe(3_000);
    expect(retryAfterMs('Mon, 30 Nov 2026 11:59:00 GMT', now)).toBe(0);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs(null, now)).toBeUndefined();
  });
});
