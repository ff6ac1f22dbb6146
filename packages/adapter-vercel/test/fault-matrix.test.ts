/**
 * Faults at the wire, as a matrix: each phase of a command's life over the
 * Vercel Sandbox API (the attached start's answer before its command
 * record, mid-way, and where its finished record goes; a kill; a stdin
 * write) × each way
 * the link or a proxy in front of the service fails (connection reset, 5xx
 * with and without a JSON error body, 429 with Retry-After, slow response
 * headers within and past the bound that applies, an answer cut in the
 * middle). One test per cell; each asserts that the call settles within a
 * bound scaled by a measured round trip, with the exact output or a typed
 * error, that the command was started at most once, that no output is
 * repeated, and that after teardown nothing carrying the cell's marker is
 * alive. The matrix is printed at the end.
 *
 * The workload of a cell, the checks every cell shares and the table are
 * @sandstream/test-support/fault-matrix; this file holds the service's faults for each cell,
 * which cells apply, the bounds and the setup.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '@sandstream/types';
import { CELL_VAR, cellMark, createMatrixReport, describeMatrix, measureBaseline, runCell } from '@sandstream/test-support/fault-matrix';
import type { Observed } from '@sandstream/test-support/fault-matrix';
import { markedProcesses } from '@sandstream/test-support/processes';
import type { Fault, RecordedRequest } from '../src/emulator/index.js';
import { parseRetryAfter as retryAfterMs } from '@sandstream/remote';
import { createVercelSandbox } from '../src/index.js';
import { cellsOf, type CellSpec, type FaultTable, type TableCell } from '@sandstream/test-support/fault-table';
import { until, useEmulator, within } from './helpers.js';

const emulator = useEmulator();

const RUN_ID = `${process.pid}-${Date.now()}`;
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
/** The adapter's bounds on a start's command record (startTimeoutMs) and on a signal's request. */
const REQUEST_TIMEOUT_MS = 3_000;

/** What a cell of this backend may set besides its faults. */
interface CellOptions {
  /** The caller's `timeout` for the command, when the cell needs one. */
  readonly timeout?: number;
  /** The sandbox's kill wait, when the cell needs a shorter one. */
  readonly killWaitMs?: number;
}

/** A cell of the service's matrix: the faults, or why the cell does not apply to this backend. */
type Cell = TableCell<readonly Fault[], CellOptions>;

const bodyOf = (request: RecordedRequest): { env?: Record<string, string>; args?: string[] } =>
  (request.body ?? {}) as { env?: Record<string, string>; args?: string[] };
/** The start of the cell's command, by its marker. */
const startOf = (mark: string): Pick<Fault, 'route' | 'match'> => ({
  route: 'start-command',
  match: (request) => bodyOf(request).env?.[CELL_VAR] === mark,
});
/** The helper command of `@sandstream/remote` in `mode` (`kill`, `abandon`, `sweep`, `signal`). */
const HELPER = (mode: string) =>
  ({
    route: 'start-command',
    match: (request: RecordedRequest) => {
      const args = bodyOf(request).args ?? [];
      return args[2] === 'sandstream-helper' && args[3] === mode;
    },
  }) as const;
/** The API's kill that delivers kill(): SIGTERM to the supervisor, which forwards it to the tree. */
const KILL = { route: 'kill' } as const;
/** A rate limiter: every matching request is refused for a second, each told to come back in one. */
const RATE_LIMITED = { retryAfterSeconds: 1, forMs: 1_000 } as const;
/**
 * The same for two seconds: longer than the whole backoff of the stdin
 * writer's first resends, so only a writer that honours Retry-After gets
 * through.
 */
const RATE_LIMITED_LONG = { retryAfterSeconds: 2, forMs: 2_000 } as const;
/** The third of five stdin writes (the probe and two writes went before). */
const STDIN = { method: 'POST', path: /\/stdin$/ } as const;
/** Cuts the command's live answer part way, in the middle of a log record. */
const CUT = (mark: string) => ({ kind: 'truncate', at: { bytes: 600 }, ...startOf(mark) }) as const satisfies Fault;
/** The log request that replays the output after the cut. */
const REPLAY = { route: 'logs' } as const;
/** Where the last record of the command's answer, its finished record, would go. */
const lastRecordOf = (mark: string) => ({ at: 'before-end', ...startOf(mark) }) as const;

const ONE_DOCUMENT = 'this answer is one JSON document, not a stream of records: a cut answer is the truncated-frame cell';
const HEADERS_OUT = 'an HTTP status or slow headers exist only before the response headers; this answer already sent them with the command record';
const NO_BOUND_LOGS =
  'no bound applies to a log stream: its headers may come late and its records later still (a quiet command), so a slow answer is only slow (see slow-headers<bound); the caller\'s timeout bounds the command';

/** The cells of the matrix; an `inject` that is a function builds the faults for the marker of the cell's command. */
const MATRIX: FaultTable<CellSpec<readonly Fault[], CellOptions>> = {
  // The start's answer carries the command id, this backend's start event.
  'before-start-event': {
    // Served, and the whole answer held back (the command never ends by itself): past
    // startTimeoutMs without the command record, the start's outcome is unknown.
    reset: { inject: (mark) => [{ kind: 'reset', served: true, ...startOf(mark) }], expect: 'TransportError', extraMs: REQUEST_TIMEOUT_MS },
    '503+error-body': { inject: (mark) => [{ kind: 'http-status', status: 503, served: true, ...startOf(mark) }], expect: 'TransportError', extraMs: 0 },
    '500-bare': { inject: (mark) => [{ kind: 'http-status', status: 500, body: 'text', served: true, ...startOf(mark) }], expect: 'TransportError', extraMs: 0 },
    // A rate limiter refuses before the service: nothing starts.
    '429+retry-after': { inject: (mark) => [{ kind: 'http-status', status: 429, ...RATE_LIMITED, ...startOf(mark) }], expect: 'TransportError', extraMs: 0 },
    'slow-headers<bound': { inject: (mark) => [{ kind: 'delay', ms: 500, ...startOf(mark) }], expect: 'result', extraMs: 500 },
    // The caller's timeout gives up on the start first, and the copy that runs is swept.
    'slow-headers>bound': {
      inject: (mark) => [{ kind: 'slow-headers', ms: LATE_START_MS, ...startOf(mark) }],
      expect: 'TransportError',
      extraMs: LATE_START_MS,
      timeout: CALLER_TIMEOUT_MS,
      killWaitMs: LATE_KILL_WAIT_MS,
    },
    // The whole answer held back to be cut (as above): no command record within the bound.
    'truncated-frame': { inject: (mark) => [{ kind: 'truncate', ...startOf(mark) }], expect: 'TransportError', extraMs: REQUEST_TIMEOUT_MS },
    'cut-at-boundary': { inject: (mark) => [{ kind: 'truncate', boundary: true, close: 'end', ...startOf(mark) }], expect: 'TransportError', extraMs: REQUEST_TIMEOUT_MS },
  },
  // The command's answer is cut part way; a status or a slow answer meets the replay of its log stream.
  'mid-stream': {
    reset: { inject: (mark) => [{ kind: 'reset', at: { bytes: 600 }, ...startOf(mark) }], expect: 'result', extraMs: 0 },
    '503+error-body': { inject: (mark) => [CUT(mark), { kind: 'http-status', status: 503, ...REPLAY }], expect: 'result', extraMs: 0 },
    '500-bare': { inject: (mark) => [CUT(mark), { kind: 'http-status', status: 500, body: 'text', ...REPLAY }], expect: 'result', extraMs: 0 },
    '429+retry-after': { inject: (mark) => [CUT(mark), { kind: 'http-status', status: 429, ...RATE_LIMITED, ...REPLAY }], expect: 'result', extraMs: 1_000 },
    'slow-headers<bound': { inject: (mark) => [CUT(mark), { kind: 'delay', ms: 500, ...REPLAY }], expect: 'result', extraMs: 500 },
    'slow-headers>bound': { notApplicable: NO_BOUND_LOGS },
    // A record cut in the middle, then a clean end of the response.
    'truncated-frame': { inject: (mark) => [{ ...CUT(mark), close: 'end' }], expect: 'result', extraMs: 0 },
    // Whole records only, then a clean end while the command still writes.
    'cut-at-boundary': { inject: (mark) => [{ ...CUT(mark), close: 'end', boundary: true }], expect: 'result', extraMs: 0 },
  },
  // Where the answer's last record, the finished command, would go.
  'before-end-event': {
    reset: { inject: (mark) => [{ kind: 'reset', ...lastRecordOf(mark) }], expect: 'result', extraMs: 0 },
    // The service's own error record in its place: final.
    '503+error-body': { inject: (mark) => [{ kind: 'error', code: 'internal', ...lastRecordOf(mark) }], expect: 'TransportError', extraMs: 0 },
    '500-bare': { notApplicable: HEADERS_OUT },
    '429+retry-after': { notApplicable: HEADERS_OUT },
    'slow-headers<bound': { notApplicable: HEADERS_OUT },
    'slow-headers>bound': { notApplicable: HEADERS_OUT },
    'truncated-frame': { inject: (mark) => [{ kind: 'truncate', ...lastRecordOf(mark) }], expect: 'result', extraMs: 0 },
    // A clean end without the finished command: the end is confirmed from the log stream.
    'cut-at-boundary': { inject: (mark) => [{ kind: 'truncate', boundary: true, close: 'end', ...lastRecordOf(mark) }], expect: 'result', extraMs: 0 },
  },
  // One request to the supervisor, never repeated: a lost or refused answer is a TransportError,
  // and teardown still ends the tree (SIGKILL as the kit's helper).
  'during-kill': {
    reset: { inject: [{ kind: 'reset', ...KILL }], expect: 'TransportError', extraMs: 0 },
    '503+error-body': { inject: [{ kind: 'http-status', status: 503, ...KILL }], expect: 'TransportError', extraMs: 0 },
    '500-bare': { inject: [{ kind: 'http-status', status: 500, body: 'text', ...KILL }], expect: 'TransportError', extraMs: 0 },
    '429+retry-after': { inject: [{ kind: 'http-status', status: 429, retryAfterSeconds: 1, ...KILL }], expect: 'TransportError', extraMs: 0 },
    'slow-headers<bound': { inject: [{ kind: 'delay', ms: KILL_WAIT_MS / 4, ...KILL }], expect: 'result', extraMs: KILL_WAIT_MS / 4 },
    // kill() waits killWaitMs for the backend to confirm the signal.
    'slow-headers>bound': { inject: [{ kind: 'delay', ms: KILL_WAIT_MS * 2, ...KILL }], expect: 'TransportError', extraMs: KILL_WAIT_MS * 2 },
    'truncated-frame': { inject: [{ kind: 'truncate', ...KILL }], expect: 'TransportError', extraMs: 0 },
    'cut-at-boundary': { notApplicable: ONE_DOCUMENT },
  },
  // Writes carry the confirmed offset: a resend is harmless.
  'during-stdin-write': {
    reset: { inject: [{ kind: 'reset', served: true, ...STDIN }], expect: 'result', extraMs: 0 },
    '503+error-body': { inject: [{ kind: 'http-status', status: 503, served: true, ...STDIN }], expect: 'result', extraMs: 0 },
    // Resent are network errors, 429, 502 and 503 (ADR-0046); a 500 is an uncertain write.
    '500-bare': { inject: [{ kind: 'http-status', status: 500, body: 'text', served: true, ...STDIN }], expect: 'TransportError', extraMs: 0 },
    '429+retry-after': { inject: [{ kind: 'http-status', status: 429, ...RATE_LIMITED_LONG, ...STDIN }], expect: 'result', extraMs: 2_000 },
    'slow-headers<bound': { inject: [{ kind: 'delay', ms: 500, ...STDIN }], expect: 'result', extraMs: 500 },
    'slow-headers>bound': {
      notApplicable: 'no bound applies to a stdin write: the service answers once the bytes are in the pipe, which a slow reader delays legitimately (see slow-headers<bound)',
    },
    'truncated-frame': { inject: [{ kind: 'truncate', ...STDIN }], expect: 'result', extraMs: 0 },
    'cut-at-boundary': { notApplicable: ONE_DOCUMENT },
  },
};

const CELLS = cellsOf(MATRIX, (phase, fault) => cellMark(RUN_ID, phase, fault));

let baselineMs = 0;
const report = createMatrixReport();

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
    sandbox = createVercelSandbox({ ...emu.credentials, fetch: emu.fetch, recordBase: emu.recordBase, graceMs: GRACE_MS, killWaitMs, requestTimeoutMs: REQUEST_TIMEOUT_MS, startTimeoutMs: REQUEST_TIMEOUT_MS });
    sandboxes.set(killWaitMs, sandbox);
  }
  return sandbox;
}

function boundFor(cell: Cell): number {
  return 8 * baselineMs + cell.extraMs + GRACE_MS + KILL_WAIT_MS + 6_000;
}

beforeAll(async () => {
  baselineMs = await measureBaseline(await adapterSandbox());
}, 60_000);

afterAll(async () => {
  for (const sandbox of sandboxes.values()) await (await sandbox).close().catch(() => undefined);
  report.print({
    backend: 'vercel',
    baselineMs,
    starts: 'commands the service started for the cell',
  });
});

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
    const inject = (): void => {
      for (const fault of faults) emulator().inject(fault);
    };
    observed = await runCell(sb, cell.phase, { mark, bound: boundFor(cell), timeout: cell.timeout, inject });
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
  report.conclude(name, cell, observed, starts.length, boundFor(cell));
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
      { kind: 'http-status', status: 503, served: true, ...startOf(mark) },
      { kind: 'http-status', status: 503, forMs: 3_000, ...HELPER('abandon') },
    ],
  },
  {
    name: 'compound: error record × tree kill refused (503, 3 s)',
    cell: { phase: 'mid-stream', fault: 'reset', inject: [], expect: 'TransportError', extraMs: 3_000 },
    faults: (mark) => [
      { kind: 'error', code: 'internal', message: 'log storage failed', at: 2, ...startOf(mark) },
      { kind: 'http-status', status: 503, forMs: 3_000, ...HELPER('kill') },
    ],
  },
];

describeMatrix('vercel', { runId: RUN_ID, report, cells: CELLS, compound: COMPOUND, check: checkCell });

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
