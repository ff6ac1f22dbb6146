import type { Process, Sandbox } from '@sandstream/types';

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

export declare const PHASES: readonly Phase[];
export declare const FAULTS: readonly FaultName[];
/** Every command of a cell carries `CELL_VAR=<run>:<cell>`: the emulator's table and a host scan find it by that. */
export declare const CELL_VAR: 'SANDSTREAM_FAULT_CELL';

export declare const BURSTS: number;
export declare const PER_BURST: number;
/** Numbered lines 1..BURSTS×PER_BURST in bursts, and a member that outlives them: the command never ends by itself. */
export declare const OUTPUT_ARGV: readonly string[];
export declare const KILL_LINES: number;
/** Numbered lines 1..KILL_LINES, then a member that outlives them until a signal ends the group. */
export declare const KILL_ARGV: readonly string[];
/** Stdin writes of PER_WRITE numbered lines each, echoed by cat. */
export declare const WRITES: number;
export declare const PER_WRITE: number;

/** `<phase> × <fault>`. */
export declare function cellName(cell: Pick<CellPlan, 'phase' | 'fault'>): string;
/** The marker of a cell's command in the run `runId`: `<runId>:<phase>:<fault>`. */
export declare function cellMark(runId: string, phase: Phase, fault: FaultName): string;
/** The numbered lines `from`..`to`, each ended by a newline. */
export declare function lines(from: number, to: number): string;
/** How many numbered lines `text` holds, if it is exactly 1..n (no repeat, no gap, nothing else); fails otherwise. */
export declare function sequenceLength(text: string): number;
/** How `promise` settled and how long it took; fails when it has not settled within `bound`. */
export declare function settle<T>(promise: Promise<T>, bound: number, what: string): Promise<Settled<T>>;
/** `ok`, or the class of the error. */
export declare function nameOf(settled: Settled<unknown>): string;
/** Disposes within the bound; disposal rejects only with a typed error (the end could not be confirmed). */
export declare function disposed(proc: Process, bound: number): Promise<void>;
/** Reads a Process to its end (or its error), decoding stdout. */
export declare function drain(proc: Process, sink: { text: string }): Promise<void>;
/** The median time of three runs of the output workload without a fault, each checked exact. */
export declare function measureBaseline(sb: Sandbox): Promise<number>;

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

/**
 * The workload of a cell's phase: during-kill kills a command once its
 * lines are out (injecting just before), during-stdin-write writes to cat
 * (injecting before the third write), every other phase streams the numbered
 * lines (injecting before the start). Checks what arrived and how it ended.
 */
export declare function runCell(sb: Sandbox, phase: Phase, options: RunCellOptions): Promise<Observed>;

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
export declare function createMatrixReport(): MatrixReport;

/** Two faults at once, run as a cell of `cell`'s phase. */
export interface CompoundCell<C, F> {
  readonly name: string;
  readonly cell: C;
  /** The faults, for the marker of the cell's command. */
  readonly faults: (mark: string) => F;
}

/**
 * The tests of the matrix, in the table's order: `<backend>: phase × wire
 * fault`, one test per cell (a cell that does not apply is skipped with its
 * reason, and so is its row), then `<backend>: compound faults`, one test
 * per pair of faults; each 60 s at most, each run by `check` with the
 * marker of its command (`<runId>:<phase>:<fault>`, `<runId>:compound-<n>`).
 */
export declare function describeMatrix<C extends CellPlan & { readonly inject: object }, P extends CellPlan, F>(
  backend: string,
  matrix: {
    readonly runId: string;
    readonly report: MatrixReport;
    readonly cells: readonly C[];
    readonly compound: ReadonlyArray<CompoundCell<P, F>>;
    readonly check: (cell: C | P, name: string, mark: string, faults: Exclude<C['inject'], NotApplicable> | F) => Promise<void>;
  },
): void;
