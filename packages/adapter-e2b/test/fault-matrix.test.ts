/**
 * Faults at the wire, as a matrix: each phase of a command's life over
 * envd (before the start event, mid-stream, before the end event, during a
 * kill, during a stdin write) × each way the link or a proxy in front of
 * envd fails (connection reset, 5xx with and without a Connect error body,
 * 429 with Retry-After, slow response headers within and past the
 * adapter's bound, a frame cut in the middle). One test per cell; each
 * asserts that the call settles within a bound scaled by a measured round
 * trip, with the exact output or a typed error, that the command was
 * started at most once, that no output is repeated, and that after
 * teardown nothing carrying the cell's marker is alive. The matrix is
 * printed at the end.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code, ConnectError } from '@connectrpc/connect';
import { Sandbox as E2BSdkSandbox } from 'e2b';
import { SandstreamError, type ExecResult, type Process, type Sandbox } from '@sandstream/types';
import { markedProcesses } from '@sandstream/test-support/processes';
import { startEnvdEmulator, type EnvdEmulator, type EnvdFault, type RecordedRequest } from '../src/emulator/index.js';
import { isDaemonAnswer } from '../src/connection.js';
import { createE2BSandbox } from '../src/index.js';
import { newRunId, waitFor, within } from './helpers.js';

const RUN_ID = newRunId();
/** Every command of a cell carries `CELL_VAR=<run>:<cell>`: the emulator's table and a host scan find it by that. */
const CELL_VAR = 'SANDSTREAM_FAULT_CELL';
/** A stream silent this long is broken (the adapter's bound on a start event and on a quiet stream). */
const STALL_MS = 1_500;
/** The adapter's bound on a signal delivery (a helper command in the sandbox). */
const REQUEST_TIMEOUT_MS = 2_000;
const GRACE_MS = 300;
const KILL_WAIT_MS = 3_000;

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
  /** The fault, or why the cell does not apply to envd. */
  readonly inject: EnvdFault | { readonly notApplicable: string };
  readonly expect: Expected;
  /** Time the fault itself adds (an injected delay, a bound that must elapse). */
  readonly extraMs: number;
}

/** A cell without its fault: what the checks need. */
type CellPlan = Omit<Cell, 'inject'>;

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

const argsOf = (request: RecordedRequest): string[] => ((request.message as { process?: { args?: string[] } } | null)?.process?.args ?? []);
/** The Start of the command itself (the launcher), by the cell marker in its environment. */
const launcher = (cell: string) => (request: RecordedRequest): boolean => JSON.stringify(request.message ?? '').includes(cell);
/** The Start of the command's output relay. */
const relay = (request: RecordedRequest): boolean => argsOf(request).includes('sandstream-relay');
/** The Start of a signal helper (how the adapter kills). */
const signalHelper = (request: RecordedRequest): boolean => argsOf(request).includes('sandstream-signal');

const HEADERS_NOT_OUT = 'an HTTP status exists only before the response headers; this stream already sent them';
const UNARY_NO_FRAMES = 'a unary answer is one message, not a stream of frames: a cut answer is the truncated-frame cell';
const SLOW_NOT_OUT = 'the response headers of this stream are already out; a stall after them is the `silence` fault (test/faults.test.ts)';

/** The cells of the matrix; `cell` is the marker value of the command run in it. */
function cellsFor(cell: (phase: Phase, fault: FaultName) => string): Cell[] {
  const cells: Cell[] = [];
  const add = (phase: Phase, fault: FaultName, inject: Cell['inject'], expected: Expected, extraMs = 0): void =>
    void cells.push({ phase, fault, inject, expect: expected, extraMs });
  for (const phase of PHASES) {
    for (const fault of FAULTS) {
      const mark = cell(phase, fault);
      switch (phase) {
        case 'before-start-event': {
          // The command's own Start: it runs, and the client sees the fault before its pid.
          const match = launcher(mark);
          const m = { method: 'Start', match } as const;
          if (fault === 'reset') add(phase, fault, { kind: 'reset', at: 0, ...m }, 'TransportError');
          if (fault === '503+error-body') add(phase, fault, { kind: 'http-status', status: 503, served: true, ...m }, 'TransportError');
          if (fault === '500-bare') add(phase, fault, { kind: 'http-status', status: 500, connectBody: false, served: true, ...m }, 'TransportError');
          // A rate limiter refuses before envd sees the request: nothing starts.
          if (fault === '429+retry-after') add(phase, fault, { kind: 'http-status', status: 429, retryAfterSeconds: 1, ...m }, 'TransportError');
          if (fault === 'slow-headers<bound') add(phase, fault, { kind: 'slow-headers', ms: STALL_MS / 3, ...m }, 'result', STALL_MS / 3);
          if (fault === 'slow-headers>bound') add(phase, fault, { kind: 'slow-headers', ms: STALL_MS * 3, ...m }, 'TransportError', STALL_MS);
          if (fault === 'truncated-frame') add(phase, fault, { kind: 'truncate', at: 0, ...m }, 'TransportError');
          // The body ends cleanly before the start event, without the end-of-stream message.
          if (fault === 'cut-at-boundary') add(phase, fault, { kind: 'truncate', at: 0, boundary: true, ...m }, 'TransportError');
          break;
        }
        case 'mid-stream': {
          // The output relay's stream, after its start event and two data events.
          const m = { method: 'Start', match: relay, at: 3 } as const;
          if (fault === 'reset') add(phase, fault, { kind: 'reset', ...m }, 'TransportError');
          if (fault === '503+error-body') add(phase, fault, { kind: 'stream-error', code: Code.Unavailable, ...m }, 'TransportError');
          if (fault === '500-bare' || fault === '429+retry-after') add(phase, fault, { notApplicable: HEADERS_NOT_OUT }, 'result');
          if (fault === 'slow-headers<bound' || fault === 'slow-headers>bound') add(phase, fault, { notApplicable: SLOW_NOT_OUT }, 'result');
          if (fault === 'truncated-frame') add(phase, fault, { kind: 'truncate', ...m }, 'TransportError');
          if (fault === 'cut-at-boundary') add(phase, fault, { kind: 'truncate', boundary: true, ...m }, 'TransportError');
          break;
        }
        case 'before-end-event': {
          // The command's own stream, where its end event (the exit status) would be.
          const m = { method: 'Start', match: launcher(mark), at: 'before-end' } as const;
          if (fault === 'reset') add(phase, fault, { kind: 'reset', ...m }, 'TransportError');
          if (fault === '503+error-body') add(phase, fault, { kind: 'stream-error', code: Code.Unavailable, ...m }, 'TransportError');
          if (fault === '500-bare' || fault === '429+retry-after') add(phase, fault, { notApplicable: HEADERS_NOT_OUT }, 'result');
          if (fault === 'slow-headers<bound' || fault === 'slow-headers>bound') add(phase, fault, { notApplicable: SLOW_NOT_OUT }, 'result');
          if (fault === 'truncated-frame') add(phase, fault, { kind: 'truncate', ...m }, 'TransportError');
          if (fault === 'cut-at-boundary') add(phase, fault, { kind: 'truncate', boundary: true, ...m }, 'TransportError');
          break;
        }
        case 'during-kill': {
          // The helper command that delivers kill(): SIGTERM to the group.
          const m = { method: 'Start', match: signalHelper } as const;
          // The helper ran (the signal was delivered), its answer is lost.
          if (fault === 'reset') add(phase, fault, { kind: 'reset', at: 0, ...m }, 'TransportError');
          // A proxy refuses: nothing was delivered; teardown must still end the command.
          if (fault === '503+error-body') add(phase, fault, { kind: 'http-status', status: 503, ...m }, 'TransportError');
          if (fault === '500-bare') add(phase, fault, { kind: 'http-status', status: 500, connectBody: false, ...m }, 'TransportError');
          if (fault === '429+retry-after') add(phase, fault, { kind: 'http-status', status: 429, retryAfterSeconds: 1, ...m }, 'TransportError');
          if (fault === 'slow-headers<bound') add(phase, fault, { kind: 'slow-headers', ms: REQUEST_TIMEOUT_MS / 4, ...m }, 'result', REQUEST_TIMEOUT_MS / 4);
          if (fault === 'slow-headers>bound') add(phase, fault, { kind: 'slow-headers', ms: REQUEST_TIMEOUT_MS * 3, ...m }, 'TransportError', REQUEST_TIMEOUT_MS);
          if (fault === 'truncated-frame') add(phase, fault, { kind: 'truncate', at: 0, ...m }, 'TransportError');
          // The helper's stream ends cleanly where its end event would be.
          if (fault === 'cut-at-boundary') add(phase, fault, { kind: 'truncate', at: 'before-end', boundary: true, ...m }, 'TransportError');
          break;
        }
        case 'during-stdin-write': {
          // The third of five SendInput writes.
          const m = { method: 'SendInput' } as const;
          // Written, the answer lost: delivered once, never resent.
          if (fault === 'reset') add(phase, fault, { kind: 'reset', ...m }, 'TransportError');
          if (fault === '503+error-body') add(phase, fault, { kind: 'http-status', status: 503, served: true, ...m }, 'TransportError');
          if (fault === '500-bare') add(phase, fault, { kind: 'http-status', status: 500, connectBody: false, served: true, ...m }, 'TransportError');
          if (fault === '429+retry-after') add(phase, fault, { kind: 'http-status', status: 429, retryAfterSeconds: 1, ...m }, 'TransportError');
          if (fault === 'slow-headers<bound') add(phase, fault, { kind: 'slow-headers', ms: STALL_MS, ...m }, 'result', STALL_MS);
          if (fault === 'slow-headers>bound') {
            add(
              phase,
              fault,
              {
                notApplicable:
                  'no bound applies to a stdin write: envd answers SendInput once the bytes are in the pipe, which a slow reader delays legitimately, so a slow answer is only slow (see slow-headers<bound)',
              },
              'result',
            );
          }
          if (fault === 'truncated-frame') add(phase, fault, { kind: 'truncate', ...m }, 'TransportError');
          if (fault === 'cut-at-boundary') add(phase, fault, { notApplicable: UNARY_NO_FRAMES }, 'result');
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
/** Numbered lines, then a member that outlives them until a signal ends the group. */
const KILL_LINES = 50;
const KILL_ARGV = ['sh', '-c', `seq 1 ${KILL_LINES}; sleep 60 & wait`];
/** Five stdin writes of 20 numbered lines each, echoed by cat. */
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

/** Disposes within the bound; disposal rejects only with a typed error (the end could not be confirmed). */
async function disposed(proc: Process, bound: number): Promise<void> {
  const outcome = await settle(proc[Symbol.asyncDispose](), bound, 'dispose');
  if (!outcome.ok) expect(outcome.error).toBeInstanceOf(SandstreamError);
}

/** Reads a Process to its end (or its error), decoding stdout. */
async function drain(proc: Process, sink: { text: string }): Promise<void> {
  const decoder = new TextDecoder();
  for await (const chunk of proc) if (chunk.stream === 'stdout') sink.text += decoder.decode(chunk.data, { stream: true });
}

let envd: EnvdEmulator;
let native: E2BSdkSandbox;
/** Median time of the output workload without a fault. */
let baselineMs = 0;
const rows = new Map<string, { outcome: string; ms: string; starts: string }>();

async function adapterSandbox(): Promise<Sandbox<E2BSdkSandbox>> {
  return createE2BSandbox({
    sandbox: native,
    keepaliveSeconds: 1,
    stallMs: STALL_MS,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    graceMs: GRACE_MS,
    killWaitMs: KILL_WAIT_MS,
  });
}

/** Generous: a loaded machine, the round trip measured, plus what the fault itself must take. */
function boundFor(cell: CellPlan): number {
  return 8 * baselineMs + cell.extraMs + GRACE_MS + KILL_WAIT_MS + 6_000;
}

beforeAll(async () => {
  envd = await startEnvdEmulator({});
  native = await E2BSdkSandbox.create({ debug: true, sandboxUrl: envd.url });
  const sb = await adapterSandbox();
  const times: number[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      const result = await within(30_000, sb.run(OUTPUT_ARGV), 'a run without a fault');
      times.push(performance.now() - started);
      expect(result.stdoutText).toBe(lines(1, BURSTS * PER_BURST));
    }
  } finally {
    await sb.close();
  }
  times.sort((a, b) => a - b);
  baselineMs = times[1]!;
}, 60_000);

afterAll(async () => {
  await envd?.close();
  const names = [...CELLS.map((cell) => `${cell.phase} × ${cell.fault}`), ...COMPOUND.map((c) => c.name)];
  const width = Math.max(...names.map((name) => name.length));
  const text = [
    `e2b fault matrix (round trip without a fault: ${baselineMs.toFixed(0)} ms; ms = time to settle; starts = Starts of the cell's command)`,
    `${'cell'.padEnd(width)}  ${'ms'.padStart(6)}  starts  outcome`,
    ...names.map((name) => {
      const r = rows.get(name) ?? { outcome: 'failed or not run', ms: '-', starts: '-' };
      return `${name.padEnd(width)}  ${r.ms.padStart(6)}  ${r.starts.padStart(6)}  ${r.outcome}`;
    }),
  ].join('\n');
  console.log(text);
});

/** What the cell did, for the table and the assertions. */
interface Observed {
  outcome: string;
  settledMs: number;
  /** `result` when the command's result was exact, else the typed error's class. */
  verdict: 'result' | string;
}

async function runOutputCell(sb: Sandbox, cell: CellPlan, mark: string, fault: EnvdFault | readonly EnvdFault[]): Promise<Observed> {
  for (const one of Array.isArray(fault) ? fault : [fault]) envd.inject(one);
  const bound = boundFor(cell);
  const started = performance.now();
  const proc = sb.stream(OUTPUT_ARGV, { env: { [CELL_VAR]: mark } });
  const out = { text: '' };
  try {
    const reading = await settle(drain(proc, out), bound, 'reading the output');
    const waited = await settle(proc.wait(), bound, 'wait()');
    const settledMs = performance.now() - started;
    // Whatever arrived is a clean prefix: nothing repeated, nothing skipped.
    const count = sequenceLength(out.text);
    if (waited.ok) {
      const result = waited.value as ExecResult;
      expect(reading.ok).toBe(true);
      expect(result.exitCode).toBe(0);
      expect(count).toBe(BURSTS * PER_BURST);
      return { outcome: `result (exit 0, ${count} lines exact)`, settledMs, verdict: 'result' };
    }
    expect(waited.error).toBeInstanceOf(SandstreamError);
    return { outcome: `${nameOf(waited)} after ${count} lines`, settledMs, verdict: nameOf(waited) };
  } finally {
    await disposed(proc, bound);
  }
}

async function runKillCell(sb: Sandbox, cell: CellPlan, mark: string, fault: EnvdFault): Promise<Observed> {
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
    envd.inject(fault);
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
    // Whether or not the signal arrived, teardown ends the command.
    const disposed = await settle(proc[Symbol.asyncDispose](), bound, 'dispose after a failed kill()');
    const waited = await settle(proc.wait(), bound, 'wait() after dispose');
    const end = waited.ok ? `ended by ${(waited.value as ExecResult).signal ?? `exit ${(waited.value as ExecResult).exitCode}`}` : nameOf(waited);
    return { outcome: `kill() ${nameOf(killed)}; dispose ${nameOf(disposed)}, ${end}`, settledMs, verdict: nameOf(killed) };
  } finally {
    await iterator.return?.();
    await disposed(proc, bound);
  }
}

async function runStdinCell(sb: Sandbox, cell: CellPlan, mark: string, fault: EnvdFault): Promise<Observed> {
  const bound = boundFor(cell);
  const proc = sb.stream(['cat'], { env: { [CELL_VAR]: mark }, stdin: 'pipe' });
  const out = { text: '' };
  const reading = drain(proc, out).catch(() => undefined);
  try {
    await within(bound, proc.started(), 'start');
    let failed: Settled<void> | undefined;
    let settledMs = 0;
    for (let w = 0; w < WRITES; w++) {
      if (w === 2) envd.inject(fault);
      const write = await settle(proc.stdin!.write(lines(w * PER_WRITE + 1, (w + 1) * PER_WRITE)), bound, `write ${w + 1}`);
      if (w === 2) settledMs = write.ms;
      if (!write.ok && failed === undefined) {
        failed = write;
        expect(write.error).toBeInstanceOf(SandstreamError);
      } else if (!write.ok) {
        // After an uncertain write, later writes are refused, never resent.
        expect(write.error).toBeInstanceOf(SandstreamError);
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
    // The faulted write arrived once or not at all; nothing after it.
    expect([2 * PER_WRITE, 3 * PER_WRITE]).toContain(count);
    return { outcome: `write 3 ${nameOf(failed)}; ${count} lines, each once`, settledMs, verdict: nameOf(failed) };
  } finally {
    await disposed(proc, bound);
  }
}

/**
 * One cell: the command under the fault, then the checks every cell shares
 * (the fault struck, one start at most, nothing left alive), its row, and
 * its verdict.
 */
async function checkCell(cell: CellPlan, name: string, mark: string, fault: EnvdFault | readonly EnvdFault[]): Promise<void> {
  const sb = await adapterSandbox();
  let observed: Observed;
  try {
    observed =
      cell.phase === 'during-kill'
        ? await runKillCell(sb, cell, mark, fault as EnvdFault)
        : cell.phase === 'during-stdin-write'
          ? await runStdinCell(sb, cell, mark, fault as EnvdFault)
          : await runOutputCell(sb, cell, mark, fault);
  } finally {
    await within(boundFor(cell), sb.close(), 'close()');
  }
  // The fault struck (a cell whose fault never fired proves nothing).
  expect(envd.pendingFaults()).toEqual([]);
  // Started at most once; whatever started is gone after teardown, in
  // the emulator's table and on the host.
  const starts = envd.processes().filter((p) => p.config.envs[CELL_VAR] === mark);
  expect(starts.length).toBeLessThanOrEqual(1);
  await waitFor(
    () => starts.every((p) => envd.groupMembers(p.pid).length === 0) && markedProcesses(CELL_VAR, mark).length === 0,
    boundFor(cell),
    `processes of ${name} left: ${JSON.stringify(markedProcesses(CELL_VAR, mark))}`,
  );
  rows.set(name, { outcome: observed.outcome, ms: observed.settledMs.toFixed(0), starts: String(starts.length) });
  expect(observed.settledMs).toBeLessThan(boundFor(cell));
  expect(observed.verdict).toBe(cell.expect);
}

/**
 * Two faults at once: a broken link, then the request that would end what
 * the break left running refused once. The kill after a break is retried
 * within the adapter's request bound, so nothing is left running.
 */
const COMPOUND: ReadonlyArray<{ name: string; cell: CellPlan; faults: (mark: string) => EnvdFault[] }> = [
  {
    name: 'compound: start cut × List refused (503)',
    cell: { phase: 'before-start-event', fault: 'reset', expect: 'TransportError', extraMs: REQUEST_TIMEOUT_MS },
    faults: (mark) => [
      { kind: 'reset', at: 0, method: 'Start', match: launcher(mark) },
      { kind: 'http-status', status: 503, method: 'List' },
    ],
  },
  {
    name: 'compound: output cut × kill refused (503)',
    cell: { phase: 'mid-stream', fault: 'reset', expect: 'TransportError', extraMs: REQUEST_TIMEOUT_MS },
    faults: () => [
      { kind: 'reset', at: 3, method: 'Start', match: relay },
      { kind: 'http-status', status: 503, method: 'Start', match: signalHelper },
    ],
  },
];

describe('e2b: phase × wire fault', () => {
  for (const cell of CELLS) {
    const name = `${cell.phase} × ${cell.fault}`;
    if ('notApplicable' in cell.inject) {
      const reason = cell.inject.notApplicable;
      it.skip(`${name} — skipped: not applicable: ${reason}`, () => undefined);
      rows.set(name, { outcome: `n/a: ${reason}`, ms: '-', starts: '-' });
      continue;
    }
    const fault = cell.inject;
    it(name, () => checkCell(cell, name, cellId(cell.phase, cell.fault), fault), 60_000);
  }
});

describe('e2b: compound faults', () => {
  for (const [index, compound] of COMPOUND.entries()) {
    it(compound.name, () => {
      const mark = `${RUN_ID}:compound-${index}`;
      return checkCell(compound.cell, compound.name, mark, compound.faults(mark));
    }, 60_000);
  }
});

describe('regressions found by the matrix', () => {
  it('a frame cut before the start event is not taken for envd refusing the start (fault-matrix cell before-start-event×truncated-frame)', () => {
    // The client's own errors for a cut frame and a bare status carry codes
    // envd also answers with; only envd's own answers are definite.
    expect(isDaemonAnswer(new ConnectError('protocol error: incomplete envelope', Code.InvalidArgument))).toBe(false);
    expect(isDaemonAnswer(new ConnectError('protocol error: promised 16 bytes, received 8', Code.InvalidArgument))).toBe(false);
    expect(isDaemonAnswer(new ConnectError('HTTP 400', Code.Internal))).toBe(false);
    expect(isDaemonAnswer(new ConnectError('protocol error: missing EndStreamResponse', Code.InvalidArgument))).toBe(false);
    expect(isDaemonAnswer(new ConnectError('unsupported content type text/html', Code.Internal))).toBe(false);
    expect(isDaemonAnswer(new ConnectError('unexpected end flag', Code.InvalidArgument))).toBe(false);
    expect(isDaemonAnswer(new ConnectError("cwd '/nope' does not exist", Code.InvalidArgument))).toBe(true);
    expect(isDaemonAnswer(new ConnectError('error writing to stdin: stdin not enabled or closed', Code.Internal))).toBe(true);
  });
});
