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
 *
 * The workload of a cell, the checks every cell shares and the table are
 * @sandstream/test-support/fault-matrix; this file holds envd's faults for each cell,
 * which cells apply, the bounds and the setup.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code, ConnectError } from '@connectrpc/connect';
import { Sandbox as E2BSdkSandbox } from 'e2b';
import type { Sandbox } from '@sandstream/types';
import { CELL_VAR, cellMark, createMatrixReport, describeMatrix, measureBaseline, runCell } from '@sandstream/test-support/fault-matrix';
import type { CellPlan, Observed } from '@sandstream/test-support/fault-matrix';
import { markedProcesses } from '@sandstream/test-support/processes';
import { startEnvdEmulator, type EnvdEmulator, type EnvdFault, type RecordedRequest } from '../src/emulator/index.js';
import { isDaemonAnswer } from '../src/connection.js';
import { createE2BSandbox } from '../src/index.js';
import { cellsOf, type CellSpec, type FaultTable } from '@sandstream/test-support/fault-table';
import { isHelperStart, isSupervisorStart, newRunId, waitFor, within } from './helpers.js';

const RUN_ID = newRunId();
/** A stream silent this long is broken (the adapter's bound on a start event and on a quiet stream). */
const STALL_MS = 1_500;
/** The adapter's bound on a signal delivery (a helper command in the sandbox). */
const REQUEST_TIMEOUT_MS = 2_000;
const GRACE_MS = 300;
const KILL_WAIT_MS = 3_000;

/** The Start of the command itself (its supervisor), by the cell marker in its environment. */
const launcher = (cell: string) => (request: RecordedRequest): boolean => isSupervisorStart(request) && JSON.stringify(request.body ?? '').includes(cell);
/** The command's own Start, or its own stream from the event `at` on. */
const ownStart = (mark: string) => ({ route: 'Start', match: launcher(mark) }) as const;
const ownStream = (mark: string, at: 3 | 'before-end') => ({ route: 'Start', match: launcher(mark), at }) as const;
/** The request that delivers kill(). */
const SIGNAL = { route: 'SendSignal' } as const;
/** A stdin write. */
const STDIN = { route: 'SendInput' } as const;

const HEADERS_NOT_OUT = 'an HTTP status exists only before the response headers; this stream already sent them';
const UNARY_NO_FRAMES = 'a unary answer is one message, not a stream of frames: a cut answer is the truncated-frame cell';
const SLOW_NOT_OUT = 'the response headers of this stream are already out; a stall after them is the `stall` fault (test/faults.test.ts)';

/** The cells of the matrix; an `inject` that is a function builds the fault for the marker of the cell's command. */
const MATRIX: FaultTable<CellSpec<EnvdFault>> = {
  // The command's own Start: it runs, and the client sees the fault before its pid.
  'before-start-event': {
    reset: { inject: (mark) => ({ kind: 'reset', at: 0, ...ownStart(mark) }), expect: 'TransportError', extraMs: 0 },
    '503+error-body': { inject: (mark) => ({ kind: 'http-status', status: 503, served: true, ...ownStart(mark) }), expect: 'TransportError', extraMs: 0 },
    '500-bare': { inject: (mark) => ({ kind: 'http-status', status: 500, body: 'text', served: true, ...ownStart(mark) }), expect: 'TransportError', extraMs: 0 },
    // A rate limiter refuses before envd sees the request: nothing starts.
    '429+retry-after': { inject: (mark) => ({ kind: 'http-status', status: 429, retryAfterSeconds: 1, ...ownStart(mark) }), expect: 'TransportError', extraMs: 0 },
    'slow-headers<bound': { inject: (mark) => ({ kind: 'slow-headers', ms: STALL_MS / 3, ...ownStart(mark) }), expect: 'result', extraMs: STALL_MS / 3 },
    'slow-headers>bound': { inject: (mark) => ({ kind: 'slow-headers', ms: STALL_MS * 3, ...ownStart(mark) }), expect: 'TransportError', extraMs: STALL_MS },
    'truncated-frame': { inject: (mark) => ({ kind: 'truncate', at: 0, ...ownStart(mark) }), expect: 'TransportError', extraMs: 0 },
    // The body ends cleanly before the start event, without the end-of-stream message.
    'cut-at-boundary': { inject: (mark) => ({ kind: 'truncate', at: 0, boundary: true, ...ownStart(mark) }), expect: 'TransportError', extraMs: 0 },
  },
  // The command's own stream (the supervisor's), after its start event and two data events.
  'mid-stream': {
    reset: { inject: (mark) => ({ kind: 'reset', ...ownStream(mark, 3) }), expect: 'TransportError', extraMs: 0 },
    '503+error-body': { inject: (mark) => ({ kind: 'error', code: 'unavailable', ...ownStream(mark, 3) }), expect: 'TransportError', extraMs: 0 },
    '500-bare': { notApplicable: HEADERS_NOT_OUT },
    '429+retry-after': { notApplicable: HEADERS_NOT_OUT },
    'slow-headers<bound': { notApplicable: SLOW_NOT_OUT },
    'slow-headers>bound': { notApplicable: SLOW_NOT_OUT },
    'truncated-frame': { inject: (mark) => ({ kind: 'truncate', ...ownStream(mark, 3) }), expect: 'TransportError', extraMs: 0 },
    'cut-at-boundary': { inject: (mark) => ({ kind: 'truncate', boundary: true, ...ownStream(mark, 3) }), expect: 'TransportError', extraMs: 0 },
  },
  // The command's own stream, where its end event would be (after the supervisor's `gone`).
  'before-end-event': {
    reset: { inject: (mark) => ({ kind: 'reset', ...ownStream(mark, 'before-end') }), expect: 'TransportError', extraMs: 0 },
    '503+error-body': { inject: (mark) => ({ kind: 'error', code: 'unavailable', ...ownStream(mark, 'before-end') }), expect: 'TransportError', extraMs: 0 },
    '500-bare': { notApplicable: HEADERS_NOT_OUT },
    '429+retry-after': { notApplicable: HEADERS_NOT_OUT },
    'slow-headers<bound': { notApplicable: SLOW_NOT_OUT },
    'slow-headers>bound': { notApplicable: SLOW_NOT_OUT },
    'truncated-frame': { inject: (mark) => ({ kind: 'truncate', ...ownStream(mark, 'before-end') }), expect: 'TransportError', extraMs: 0 },
    'cut-at-boundary': { inject: (mark) => ({ kind: 'truncate', boundary: true, ...ownStream(mark, 'before-end') }), expect: 'TransportError', extraMs: 0 },
  },
  // The request that delivers kill(): SIGTERM as one SendSignal to the supervisor, which
  // forwards it to the tree.
  'during-kill': {
    // The signal was delivered, its answer is lost.
    reset: { inject: { kind: 'reset', ...SIGNAL }, expect: 'TransportError', extraMs: 0 },
    // A proxy refuses: nothing was delivered; teardown must still end the command.
    '503+error-body': { inject: { kind: 'http-status', status: 503, ...SIGNAL }, expect: 'TransportError', extraMs: 0 },
    '500-bare': { inject: { kind: 'http-status', status: 500, body: 'text', ...SIGNAL }, expect: 'TransportError', extraMs: 0 },
    '429+retry-after': { inject: { kind: 'http-status', status: 429, retryAfterSeconds: 1, ...SIGNAL }, expect: 'TransportError', extraMs: 0 },
    'slow-headers<bound': { inject: { kind: 'slow-headers', ms: REQUEST_TIMEOUT_MS / 4, ...SIGNAL }, expect: 'result', extraMs: REQUEST_TIMEOUT_MS / 4 },
    'slow-headers>bound': { inject: { kind: 'slow-headers', ms: REQUEST_TIMEOUT_MS * 3, ...SIGNAL }, expect: 'TransportError', extraMs: REQUEST_TIMEOUT_MS },
    'truncated-frame': { inject: { kind: 'truncate', ...SIGNAL }, expect: 'TransportError', extraMs: 0 },
    'cut-at-boundary': { notApplicable: UNARY_NO_FRAMES },
  },
  // The third of five SendInput writes.
  'during-stdin-write': {
    // Written, the answer lost: delivered once, never resent.
    reset: { inject: { kind: 'reset', served: true, ...STDIN }, expect: 'TransportError', extraMs: 0 },
    '503+error-body': { inject: { kind: 'http-status', status: 503, served: true, ...STDIN }, expect: 'TransportError', extraMs: 0 },
    '500-bare': { inject: { kind: 'http-status', status: 500, body: 'text', served: true, ...STDIN }, expect: 'TransportError', extraMs: 0 },
    '429+retry-after': { inject: { kind: 'http-status', status: 429, retryAfterSeconds: 1, ...STDIN }, expect: 'TransportError', extraMs: 0 },
    'slow-headers<bound': { inject: { kind: 'slow-headers', ms: STALL_MS, ...STDIN }, expect: 'result', extraMs: STALL_MS },
    'slow-headers>bound': {
      notApplicable:
        'no bound applies to a stdin write: envd answers SendInput once the bytes are in the pipe, which a slow reader delays legitimately, so a slow answer is only slow (see slow-headers<bound)',
    },
    'truncated-frame': { inject: { kind: 'truncate', ...STDIN }, expect: 'TransportError', extraMs: 0 },
    'cut-at-boundary': { notApplicable: UNARY_NO_FRAMES },
  },
};

const CELLS = cellsOf(MATRIX, (phase, fault) => cellMark(RUN_ID, phase, fault));

let envd: EnvdEmulator;
let native: E2BSdkSandbox;
/** Median time of the output workload without a fault. */
let baselineMs = 0;
const report = createMatrixReport();

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
  try {
    baselineMs = await measureBaseline(sb);
  } finally {
    await sb.close();
  }
}, 60_000);

afterAll(async () => {
  await envd?.close();
  report.print({
    backend: 'e2b',
    baselineMs,
    starts: "Starts of the cell's command",
  });
});

/**
 * One cell: the command under the fault, then the checks every cell shares
 * (the fault struck, one start at most, nothing left alive), its row, and
 * its verdict.
 */
async function checkCell(cell: CellPlan, name: string, mark: string, fault: EnvdFault | readonly EnvdFault[]): Promise<void> {
  const helpersBefore = envd.processes().length;
  const sb = await adapterSandbox();
  let observed: Observed;
  try {
    const inject = (): void => {
      for (const one of Array.isArray(fault) ? fault : [fault]) envd.inject(one);
    };
    observed = await runCell(sb, cell.phase, { mark, bound: boundFor(cell), inject });
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
  // The supervisor that started, and every helper the cell's teardown started, ended: nothing of
  // the adapter's own waits in the sandbox (the emulator may still be reaping on a loaded machine).
  const ours = envd.processes().slice(helpersBefore).filter((p) => p.config.envs[CELL_VAR] === mark || p.config.args[2] === 'sandstream-helper');
  const running = (): number[] => ours.filter((p) => p.end === undefined).map((p) => p.pid);
  await waitFor(() => running().length === 0, boundFor(cell), `processes of ${name} still running`).catch(() => undefined);
  expect(running(), `supervisor or helpers of ${name} still running`).toEqual([]);
  report.conclude(name, cell, observed, starts.length, boundFor(cell));
}

/**
 * Two faults at once: a broken link, then the request that would end what
 * the break left running refused once. The kill after a break is retried
 * within the adapter's request bound, so nothing is left running.
 */
const COMPOUND: ReadonlyArray<{ name: string; cell: CellPlan; faults: (mark: string) => EnvdFault[] }> = [
  {
    name: 'compound: start cut × sweep of the abandoned start refused (503)',
    cell: { phase: 'before-start-event', fault: 'reset', expect: 'TransportError', extraMs: REQUEST_TIMEOUT_MS },
    faults: (mark) => [
      { kind: 'reset', at: 0, route: 'Start', match: launcher(mark) },
      { kind: 'http-status', status: 503, route: 'Start', match: isHelperStart('abandon') },
    ],
  },
  {
    name: 'compound: output cut × kill refused (503)',
    cell: { phase: 'mid-stream', fault: 'reset', expect: 'TransportError', extraMs: REQUEST_TIMEOUT_MS },
    faults: (mark) => [
      { kind: 'reset', at: 3, route: 'Start', match: launcher(mark) },
      { kind: 'http-status', status: 503, route: 'Start', match: isHelperStart('kill') },
    ],
  },
];

describeMatrix('e2b', { runId: RUN_ID, report, cells: CELLS, compound: COMPOUND, check: checkCell });

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
