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
import { CELL_VAR, FAULTS, PHASES, cellMark, createMatrixReport, describeMatrix, measureBaseline, runCell } from '@sandstream/test-support/fault-matrix';
import type { CellPlan, Expected, FaultName, Observed, Phase } from '@sandstream/test-support/fault-matrix';
import { markedProcesses } from '@sandstream/test-support/processes';
import type { Fault, RecordedRequest } from '../src/emulator/index.js';
import { parseRetryAfter as retryAfterMs } from '@sandstream/remote';
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
/** The adapter's bounds on a start's command record (startTimeoutMs) and on a signal's request. */
const REQUEST_TIMEOUT_MS = 3_000;

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

const ONE_DOCUMENT = 'this answer is one JSON document, not a stream of records: a cut answer is the truncated-frame cell';
const HEADERS_OUT = 'an HTTP status or slow headers exist only before the response headers; this answer already sent them with the command record';
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
          // Served, and the whole answer held back (the command never ends by itself): past
          // startTimeoutMs without the command record, the start's outcome is unknown.
          if (fault === 'reset') add(phase, fault, [{ kind: 'reset', served: true, ...m }], 'TransportError', REQUEST_TIMEOUT_MS);
          if (fault === '503+error-body') add(phase, fault, [{ kind: 'http-status', status: 503, served: true, ...m }], 'TransportError');
          if (fault === '500-bare') add(phase, fault, [{ kind: 'http-status', status: 500, body: 'text', served: true, ...m }], 'TransportError');
          // A rate limiter refuses before the service: nothing starts.
          if (fault === '429+retry-after') add(phase, fault, [{ kind: 'http-status', status: 429, ...RATE_LIMITED, ...m }], 'TransportError');
          if (fault === 'slow-headers<bound') add(phase, fault, [{ kind: 'delay', ms: 500, ...m }], 'result', 500);
          // The caller's timeout gives up on the start first, and the copy that runs is swept.
          if (fault === 'slow-headers>bound') {
            add(phase, fault, [{ kind: 'slow-headers', ms: LATE_START_MS, ...m }], 'TransportError', LATE_START_MS, {
              timeout: CALLER_TIMEOUT_MS,
              killWaitMs: LATE_KILL_WAIT_MS,
            });
          }
          // The whole answer held back to be cut (as above): no command record within the bound.
          if (fault === 'truncated-frame') add(phase, fault, [{ kind: 'truncate', ...m }], 'TransportError', REQUEST_TIMEOUT_MS);
          if (fault === 'cut-at-boundary') add(phase, fault, [{ kind: 'truncate', boundary: true, close: 'end', ...m }], 'TransportError', REQUEST_TIMEOUT_MS);
          break;
        }
        case 'mid-stream': {
          // The command's answer is cut part way; a status or a slow answer meets the replay of its log stream.
          const cut = CUT(mark);
          if (fault === 'reset') add(phase, fault, [{ kind: 'reset', at: { bytes: 600 }, ...startOf(mark) }], 'result');
          if (fault === '503+error-body') add(phase, fault, [cut, { kind: 'http-status', status: 503, ...REPLAY }], 'result');
          if (fault === '500-bare') add(phase, fault, [cut, { kind: 'http-status', status: 500, body: 'text', ...REPLAY }], 'result');
          if (fault === '429+retry-after') add(phase, fault, [cut, { kind: 'http-status', status: 429, ...RATE_LIMITED, ...REPLAY }], 'result', 1_000);
          if (fault === 'slow-headers<bound') add(phase, fault, [cut, { kind: 'delay', ms: 500, ...REPLAY }], 'result', 500);
          if (fault === 'slow-headers>bound') add(phase, fault, { notApplicable: NO_BOUND_LOGS }, 'result');
          // A record cut in the middle, then a clean end of the response.
          if (fault === 'truncated-frame') add(phase, fault, [{ ...cut, close: 'end' }], 'result');
          // Whole records only, then a clean end while the command still writes.
          if (fault === 'cut-at-boundary') add(phase, fault, [{ ...cut, close: 'end', boundary: true }], 'result');
          break;
        }
        case 'before-end-event': {
          // Where the answer's last record, the finished command, would go.
          const m = { at: 'before-end', ...startOf(mark) } as const;
          if (fault === 'reset') add(phase, fault, [{ kind: 'reset', ...m }], 'result');
          // The service's own error record in its place: final.
          if (fault === '503+error-body') add(phase, fault, [{ kind: 'error', code: 'internal', ...m }], 'TransportError');
          if (fault === '500-bare' || fault === '429+retry-after') add(phase, fault, { notApplicable: HEADERS_OUT }, 'result');
          if (fault === 'slow-headers<bound' || fault === 'slow-headers>bound') add(phase, fault, { notApplicable: HEADERS_OUT }, 'result');
          if (fault === 'truncated-frame') add(phase, fault, [{ kind: 'truncate', ...m }], 'result');
          // A clean end without the finished command: the end is confirmed from the log stream.
          if (fault === 'cut-at-boundary') add(phase, fault, [{ kind: 'truncate', boundary: true, close: 'end', ...m }], 'result');
          break;
        }
        case 'during-kill': {
          // One request to the supervisor, never repeated: a lost or refused answer is a TransportError,
          // and teardown still ends the tree (SIGKILL as the kit's helper).
          if (fault === 'reset') add(phase, fault, [{ kind: 'reset', ...KILL }], 'TransportError');
          if (fault === '503+error-body') add(phase, fault, [{ kind: 'http-status', status: 503, ...KILL }], 'TransportError');
          if (fault === '500-bare') add(phase, fault, [{ kind: 'http-status', status: 500, body: 'text', ...KILL }], 'TransportError');
          if (fault === '429+retry-after') add(phase, fault, [{ kind: 'http-status', status: 429, retryAfterSeconds: 1, ...KILL }], 'TransportError');
          if (fault === 'slow-headers<bound') add(phase, fault, [{ kind: 'delay', ms: KILL_WAIT_MS / 4, ...KILL }], 'result', KILL_WAIT_MS / 4);
          // kill() waits killWaitMs for the backend to confirm the signal.
          if (fault === 'slow-headers>bound') add(phase, fault, [{ kind: 'delay', ms: KILL_WAIT_MS * 2, ...KILL }], 'TransportError', KILL_WAIT_MS * 2);
          if (fault === 'truncated-frame') add(phase, fault, [{ kind: 'truncate', ...KILL }], 'TransportError');
          if (fault === 'cut-at-boundary') add(phase, fault, { notApplicable: ONE_DOCUMENT }, 'result');
          break;
        }
        case 'during-stdin-write': {
          // Writes carry the confirmed offset: a resend is harmless.
          if (fault === 'reset') add(phase, fault, [{ kind: 'reset', served: true, ...STDIN }], 'result');
          if (fault === '503+error-body') add(phase, fault, [{ kind: 'http-status', status: 503, served: true, ...STDIN }], 'result');
          // Resent are network errors, 429, 502 and 503 (ADR-0027); a 500 is an uncertain write.
          if (fault === '500-bare') add(phase, fault, [{ kind: 'http-status', status: 500, body: 'text', served: true, ...STDIN }], 'TransportError');
          if (fault === '429+retry-after') add(phase, fault, [{ kind: 'http-status', status: 429, ...RATE_LIMITED_LONG, ...STDIN }], 'result', 2_000);
          if (fault === 'slow-headers<bound') add(phase, fault, [{ kind: 'delay', ms: 500, ...STDIN }], 'result', 500);
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
    sandbox = createVercelSandbox({ ...emu.credentials, fetch: emu.fetch, graceMs: GRACE_MS, killWaitMs, requestTimeoutMs: REQUEST_TIMEOUT_MS, startTimeoutMs: REQUEST_TIMEOUT_MS });
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
