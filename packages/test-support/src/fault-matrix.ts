// The fault matrix every remote adapter runs at the wire: each phase of a
// command's life × each way the link or a proxy in front of the backend
// fails. What is the same for every backend lives here: the phases and the
// faults, the workload of a cell (numbered lines, a kill, stdin writes) and
// its checks (a clean prefix, each line once, a typed error, a bound), the
// bookkeeping of the cells and the table printed at the end. Which faults a
// backend's emulator injects in each cell, which cells apply, its bounds and
// its setup are the adapter's own (its test/fault-matrix.test.ts).
import { describe, expect, it } from 'vitest';
import { SandstreamError, type ExecResult, type Process, type Sandbox } from '@sandstream/types';
import { within } from './timing.js';

/** A phase of a command's life: a row of the matrix. */
export type Phase = 'before-start-event' | 'mid-stream' | 'before-end-event' | 'during-kill' | 'during-stdin-write';
/** A way the link or a proxy fails: a column of the matrix. */
export type FaultName =
  | 'reset'
  | '503+error-body'
  | '500-bare'
  | '429+retry-after'
  | 'slow-headers<bound'
  | 'slow-headers>bound'
  | 'truncated-frame'
  | 'cut-at-boundary';
/** What a cell must end with: the exact result, or the typed error of a broken link. */
export type Expected = 'result' | 'TransportError';

/** A cell without its fault: what the checks need. */
export interface CellPlan {
  readonly phase: Phase;
  readonly fault: FaultName;
  readonly expect: Expected;
  /** Time the fault itself adds (an injected delay, a bound that must elapse). */
  readonly extraMs: number;
}

/** Why a cell does not apply to a backend. */
export interface NotApplicable {
  readonly notApplicable: string;
}

/** What a cell did, for the table and the assertions. */
export interface Observed {
  outcome: string;
  settledMs: number;
  /** `result` when the command's result was exact, else the typed error's class. */
  verdict: string;
}

export interface Settled<T> {
  readonly ok: boolean;
  readonly value?: T;
  readonly error?: unknown;
  readonly ms: number;
}

/** How a cell's workload runs. */
export interface RunCellOptions {
  /** The cell's marker, the value of CELL_VAR in its command's environment. */
  readonly mark: string;
  /** The bound on each call. */
  readonly bound: number;
  /** The caller's `timeout` of the output command, when the cell needs one. */
  readonly timeout?: number | undefined;
  /** Injects the cell's faults, at the cell's phase. */
  readonly inject: () => void;
}

/** The rows of the matrix, filled in by its cells and printed at the end. */
export interface MatrixReport {
  /** The next row of the table (the tests of {@link describeMatrix} add theirs). */
  add(name: string): void;
  /** The row of a cell that does not apply. */
  notApplicable(name: string, reason: string): void;
  /** Records the cell's row, then checks that it settled within `bound` with the verdict it expects. */
  conclude(name: string, cell: CellPlan, observed: Observed, starts: number, bound: number): void;
  /** Prints the table, every row in the order added; `starts` says what the starts column counts. */
  print(table: { backend: string; baselineMs: number; starts: string }): void;
}
/** Two faults at once, run as a cell of `cell`'s phase. */
export interface CompoundCell<C, F> {
  readonly name: string;
  readonly cell: C;
  /** The faults, for the marker of the cell's command. */
  readonly faults: (mark: string) => F;
}


/** The phases of a command's life, the rows of the matrix. */
export const PHASES: readonly Phase[] = ['before-start-event', 'mid-stream', 'before-end-event', 'during-kill', 'during-stdin-write'];
/** The ways the link or a proxy fails, the columns of the matrix. */
export const FAULTS: readonly FaultName[] = [
  'reset',
  '503+error-body',
  '500-bare',
  '429+retry-after',
  'slow-headers<bound',
  'slow-headers>bound',
  'truncated-frame',
  'cut-at-boundary',
];

/** Every command of a cell carries `CELL_VAR=<run>:<cell>`: the emulator's table and a host scan find it by that. */
export const CELL_VAR: 'SANDSTREAM_FAULT_CELL' = 'SANDSTREAM_FAULT_CELL';

export const BURSTS: number = 6;
export const PER_BURST: number = 50;
/**
 * Numbered lines in bursts, and a member that outlives them: the command
 * never ends by itself, so a cell proves that the adapter ended its tree
 * (after a correct result, the runtime's wind-down of what the leader left;
 * after a broken link, the adapter's kill).
 */
export const OUTPUT_ARGV: readonly string[] = [
  'sh',
  '-c',
  `sleep 60 & i=0; for b in $(seq ${BURSTS}); do seq $((i+1)) $((i+${PER_BURST})); i=$((i+${PER_BURST})); sleep 0.02; done`,
];
/** Numbered lines, then a member that outlives them until a signal ends the group. */
export const KILL_LINES: number = 50;
export const KILL_ARGV: readonly string[] = ['sh', '-c', `seq 1 ${KILL_LINES}; sleep 60 & wait`];
/** Five stdin writes of 20 numbered lines each, echoed by cat. */
export const WRITES: number = 5;
export const PER_WRITE: number = 20;

/** The name of a cell: its row and its column. */
export function cellName(cell: Pick<CellPlan, 'phase' | 'fault'>): string {
  return `${cell.phase} × ${cell.fault}`;
}

/** The marker of a cell's command in the run `runId`. */
export function cellMark(runId: string, phase: Phase, fault: FaultName): string {
  return `${runId}:${phase}:${fault}`;
}

/** The numbered lines `from`..`to`, each ended by a newline. */
export function lines(from: number, to: number): string {
  let text = '';
  for (let i = from; i <= to; i++) text += `${i}\n`;
  return text;
}

/** How many numbered lines `text` holds, if it is exactly 1..n (no repeat, no gap, nothing else). */
export function sequenceLength(text: string): number {
  if (text === '') return 0;
  expect(text.endsWith('\n'), `output ends mid-line: ${JSON.stringify(text.slice(-20))}`).toBe(true);
  const numbers = text.slice(0, -1).split('\n');
  numbers.forEach((line, index) => expect(line, `line ${index + 1} (a repeat or a gap)`).toBe(String(index + 1)));
  return numbers.length;
}

/** How `promise` settled and how long it took; fails when it has not settled within `bound`. */
export async function settle<T>(promise: Promise<T>, bound: number, what: string): Promise<Settled<T>> {
  const started = performance.now();
  const outcome = await within<{ ok: boolean; value?: T; error?: unknown }>(
    bound,
    promise.then(
      (value) => ({ ok: true, value }),
      (error: unknown) => ({ ok: false, error }),
    ),
    what,
  );
  return { ...outcome, ms: performance.now() - started };
}

/** `ok`, or the class of the error. */
export function nameOf(settled: Settled<unknown>): string {
  return settled.ok ? 'ok' : ((settled.error as { constructor?: { name?: string } } | undefined)?.constructor?.name ?? String(settled.error));
}

/** Disposes within the bound; disposal rejects only with a typed error (the end could not be confirmed). */
export async function disposed(proc: Process, bound: number): Promise<void> {
  const outcome = await settle(proc[Symbol.asyncDispose](), bound, 'dispose');
  if (!outcome.ok) expect(outcome.error).toBeInstanceOf(SandstreamError);
}

/** Reads a Process to its end (or its error), decoding stdout. */
export async function drain(proc: Process, sink: { text: string }): Promise<void> {
  const decoder = new TextDecoder();
  for await (const chunk of proc) if (chunk.stream === 'stdout') sink.text += decoder.decode(chunk.data, { stream: true });
}

/** The median time of three runs of the output workload without a fault, each checked exact. */
export async function measureBaseline(sb: Sandbox): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const started = performance.now();
    const result = await within(30_000, sb.run([...OUTPUT_ARGV]), 'a run without a fault');
    times.push(performance.now() - started);
    expect(result.stdoutText).toBe(lines(1, BURSTS * PER_BURST));
  }
  times.sort((a, b) => a - b);
  return times[1]!;
}

async function runOutputCell(sb: Sandbox, { mark, bound, timeout, inject }: RunCellOptions): Promise<Observed> {
  inject();
  const started = performance.now();
  const proc = sb.stream([...OUTPUT_ARGV], { env: { [CELL_VAR]: mark }, ...(timeout === undefined ? {} : { timeout }) });
  const out = { text: '' };
  try {
    const reading = await settle(drain(proc, out), bound, 'reading the output');
    const waited = await settle(proc.wait(), bound, 'wait()');
    const settledMs = performance.now() - started;
    // Whatever arrived is a clean prefix: nothing repeated, nothing skipped.
    const count = sequenceLength(out.text);
    if (waited.ok) {
      expect(reading.ok).toBe(true);
      expect(waited.value!.exitCode).toBe(0);
      expect(count).toBe(BURSTS * PER_BURST);
      return { outcome: `result (exit 0, ${count} lines exact)`, settledMs, verdict: 'result' };
    }
    expect(waited.error).toBeInstanceOf(SandstreamError);
    return { outcome: `${nameOf(waited)} after ${count} lines`, settledMs, verdict: nameOf(waited) };
  } finally {
    await disposed(proc, bound);
  }
}

async function runKillCell(sb: Sandbox, { mark, bound, inject }: RunCellOptions): Promise<Observed> {
  const proc = sb.stream([...KILL_ARGV], { env: { [CELL_VAR]: mark } });
  const out = { text: '' };
  const decoder = new TextDecoder();
  const iterator = proc[Symbol.asyncIterator]();
  try {
    while (!out.text.endsWith(`${KILL_LINES}\n`)) {
      const next = await within(bound, iterator.next(), 'the output before the kill');
      if (next.done) throw new Error('ended before the kill');
      if (next.value.stream === 'stdout') out.text += decoder.decode(next.value.data, { stream: true });
    }
    inject();
    const started = performance.now();
    const killed = await settle(proc.kill('SIGTERM'), bound, 'kill()');
    const settledMs = performance.now() - started;
    if (killed.ok) {
      const waited = await settle(proc.wait(), bound, 'wait() after kill()');
      expect(waited.ok).toBe(true);
      expect(waited.value!.signal).toBe('SIGTERM');
      expect(sequenceLength(out.text + waited.value!.stdoutText)).toBe(KILL_LINES);
      return { outcome: 'kill() ok, ended by SIGTERM', settledMs, verdict: 'result' };
    }
    expect(killed.error).toBeInstanceOf(SandstreamError);
    // Whether or not the signal arrived, teardown ends the command.
    const disposal = await settle(proc[Symbol.asyncDispose](), bound, 'dispose after a failed kill()');
    const waited = await settle(proc.wait(), bound, 'wait() after dispose');
    const end = waited.ok ? `ended by ${waited.value!.signal ?? `exit ${waited.value!.exitCode}`}` : nameOf(waited);
    return { outcome: `kill() ${nameOf(killed)}; dispose ${nameOf(disposal)}, ${end}`, settledMs, verdict: nameOf(killed) };
  } finally {
    await iterator.return?.();
    await disposed(proc, bound);
  }
}

async function runStdinCell(sb: Sandbox, { mark, bound, inject }: RunCellOptions): Promise<Observed> {
  const proc = sb.stream(['cat'], { env: { [CELL_VAR]: mark }, stdin: 'pipe' });
  const out = { text: '' };
  const reading = drain(proc, out).catch(() => undefined);
  try {
    await within(bound, proc.started(), 'start');
    let failed: Settled<void> | undefined;
    let settledMs = 0;
    for (let w = 0; w < WRITES; w++) {
      if (w === 2) inject();
      const write = await settle(proc.stdin!.write(lines(w * PER_WRITE + 1, (w + 1) * PER_WRITE)), bound, `write ${w + 1}`);
      if (w === 2) settledMs = write.ms;
      if (!write.ok) {
        // After an uncertain write, later writes are refused, never resent.
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
    expect(waited.value!.exitCode).toBe(0);
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
 * The workload of a cell's phase, with the cell's marker: during-kill kills
 * a command once its lines are out, injecting just before; during-stdin-write
 * writes to cat, injecting before the third write; every other phase streams
 * the numbered lines, injecting before the start.
 */
export function runCell(sb: Sandbox, phase: Phase, options: RunCellOptions): Promise<Observed> {
  if (phase === 'during-kill') return runKillCell(sb, options);
  if (phase === 'during-stdin-write') return runStdinCell(sb, options);
  return runOutputCell(sb, options);
}

/** The rows of the matrix, filled in by its cells and printed at the end. */
export function createMatrixReport(): MatrixReport {
  const names: string[] = [];
  const rows = new Map<string, { outcome: string; ms: string; starts: string }>();
  return {
    add(name) {
      names.push(name);
    },
    notApplicable(name, reason) {
      rows.set(name, { outcome: `n/a: ${reason}`, ms: '-', starts: '-' });
    },
    conclude(name, cell, observed, starts, bound) {
      rows.set(name, { outcome: observed.outcome, ms: observed.settledMs.toFixed(0), starts: String(starts) });
      expect(observed.settledMs).toBeLessThan(bound);
      expect(observed.verdict).toBe(cell.expect);
    },
    print({ backend, baselineMs, starts }) {
      const width = Math.max(...names.map((name) => name.length));
      console.log(
        [
          `${backend} fault matrix (round trip without a fault: ${baselineMs.toFixed(0)} ms; ms = time to settle; starts = ${starts})`,
          `${'cell'.padEnd(width)}  ${'ms'.padStart(6)}  starts  outcome`,
          ...names.map((name) => {
            const r = rows.get(name) ?? { outcome: 'failed or not run', ms: '-', starts: '-' };
            return `${name.padEnd(width)}  ${r.ms.padStart(6)}  ${r.starts.padStart(6)}  ${r.outcome}`;
          }),
        ].join('\n'),
      );
    },
  };
}

/**
 * The tests of the matrix, in the table's order: `<backend>: phase × wire
 * fault`, one test per cell (a cell that does not apply is skipped with its
 * reason, and so is its row), then `<backend>: compound faults`, one test
 * per pair of faults; each 60 s at most, each run by `check`.
 */
export function describeMatrix<C extends CellPlan & { readonly inject: object }, P extends CellPlan, F>(
  backend: string,
  {
    runId,
    report,
    cells,
    compound,
    check,
  }: {
    readonly runId: string;
    readonly report: MatrixReport;
    readonly cells: readonly C[];
    readonly compound: ReadonlyArray<CompoundCell<P, F>>;
    readonly check: (cell: C | P, name: string, mark: string, faults: Exclude<C['inject'], NotApplicable> | F) => Promise<void>;
  },
): void {
  describe(`${backend}: phase × wire fault`, () => {
    for (const cell of cells) {
      const name = cellName(cell);
      report.add(name);
      if ('notApplicable' in cell.inject) {
        const reason = (cell.inject as NotApplicable).notApplicable;
        it.skip(`${name} — skipped: not applicable: ${reason}`, () => undefined);
        report.notApplicable(name, reason);
        continue;
      }
      const inject = cell.inject as Exclude<C['inject'], NotApplicable>;
      it(name, () => check(cell, name, cellMark(runId, cell.phase, cell.fault), inject), 60_000);
    }
  });
  describe(`${backend}: compound faults`, () => {
    for (const [index, pair] of compound.entries()) {
      report.add(pair.name);
      it(pair.name, () => {
        const mark = `${runId}:compound-${index}`;
        return check(pair.cell, pair.name, mark, pair.faults(mark));
      }, 60_000);
    }
  });
}
