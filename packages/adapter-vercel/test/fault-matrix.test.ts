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
 *
 * The workload of a cell, the checks every cell shares and the table are
 * @sandstream/test-support/fault-matrix; this file holds the service's faults for each cell,
 * which cells apply, the bounds and the setup.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '@sandstream/types';
import { CELL_VAR, FAULTS, PHASES, cellMark, createMatrixReport, describeMatrix, measureBaseline, runCell } from '@sandstream/test-support/fault-matrix';
import type { CellPlan, Expected, FaultName, Observed, Phase } from '@sandstream/test-support/fault-matrix';
import { markedProcesses } from '@sandstream/test-support/processes';
import type { Fault, RecordedRequest } from '../src/emulator/index.js';
import { retryAfterMs } from '../src/api.js';
import { createVercelSandbox } from '../src/index.js';
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

interface Cell extends CellPlan {
  /** The faults, or why the cell does not apply to this backend. */
  readonly inject: readonly Fault[] | { readonly notApplicable: string };
  /** The caller's `timeout` for the command, when the cell needs one. */
  readonly timeout?: number;
  /** The sandbox's kill wait, when the cell needs a shorter one. */
  readonly killWaitMs?: number;
}

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

const CELLS = cellsFor((phase, fault) => cellMark(RUN_ID, phase, fault));

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
    sandbox = createVercelSandbox({ ...emu.credentials, fetch: emu.fetch, graceMs: GRACE_MS, killWaitMs });
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
