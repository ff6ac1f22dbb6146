/**
 * Transport faults injected by the emulator: every one ends in a typed
 * error within a bound, never a hang, and the command's whole tree is gone
 * from the emulator's process table afterwards.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Sandbox as E2BSdkSandbox } from 'e2b';
import { TransportError, type Process, type Sandbox } from '@sandstream/types';
import { startEnvdEmulator, type EnvdEmulator, type RecordedRequest } from '../src/emulator/index.js';
import { DEFAULT_PATHS, DEFAULT_RETRY, RemoteCommands } from '@sandstream/remote';
import { procStat } from '@sandstream/test-support/processes';
import { createE2BSandbox, createProcessClient, EnvdTransport } from '../src/index.js';
import { isSupervisorStart, leftovers, MARKER, newRunId, waitFor, within } from './helpers.js';

const RUN_ID = newRunId();
/** Silence after which a stream counts as broken, in these tests. */
const STALL_MS = 1_500;
/** The adapter's bound on one request of its own (the kill that follows a broken stream among them). */
const REQUEST_TIMEOUT_MS = 10_000;
/**
 * A fault must surface within the adapter's own bounds: the stall bound, then
 * the kill, repeated within the request bound; plus a margin for this process.
 * Not a guess at the machine's speed: a loaded machine makes the kill slow,
 * and the adapter still settles within these.
 */
const FAULT_BOUND_MS = STALL_MS + REQUEST_TIMEOUT_MS + 5_000;
let envd: EnvdEmulator;
let native: E2BSdkSandbox;
const open: Sandbox[] = [];

beforeAll(async () => {
  envd = await startEnvdEmulator({ env: { [MARKER]: RUN_ID } });
  native = await E2BSdkSandbox.create({ debug: true, sandboxUrl: envd.url });
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((sb) => sb.close()));
  // Bounds on what must happen, not verdicts: generous, so a machine busy
  // with other suites does not fail a correct teardown.
  await waitFor(() => leftovers(RUN_ID).length === 0, 20_000, `processes left: ${leftovers(RUN_ID).join('; ')}`);
});

afterAll(async () => {
  await envd?.close();
});

/**
 * The Start of a command itself (its supervisor). A fault aimed at it is not taken by a helper a
 * previous test's cleanup may still be starting.
 */
const LAUNCHER = (request: RecordedRequest): boolean => isSupervisorStart(request);
/** The supervisor's envd process. */
const isSupervisor = (p: { config: { args: readonly string[] } }): boolean => p.config.args[2] === 'sandstream-supervisor';

async function sandbox(): Promise<Sandbox<E2BSdkSandbox>> {
  const sb = await createE2BSandbox({ sandbox: native, keepaliveSeconds: 1, stallMs: STALL_MS, requestTimeoutMs: REQUEST_TIMEOUT_MS, graceMs: 300 });
  open.push(sb);
  return sb;
}

const TREE = 'sleep 60 & echo "child $!"; while :; do echo tick; sleep 0.05; done';

/** Starts the tree and reads until its first tick; returns the group id. */
async function startTree(proc: Process): Promise<{ pgid: number; iterator: AsyncIterator<unknown> }> {
  await within(10_000, proc.started(), 'start');
  const pgid = Number(proc.commandId);
  const iterator = proc[Symbol.asyncIterator]();
  let text = '';
  while (!text.includes('tick')) {
    const next = await within(10_000, iterator.next(), 'first output');
    if (next.done) throw new Error('ended early');
    text += new TextDecoder().decode((next.value as { data: Uint8Array }).data);
  }
  expect(envd.groupMembers(pgid).length).toBeGreaterThanOrEqual(2);
  return { pgid, iterator };
}

async function expectRejects(promise: Promise<unknown>, what: string): Promise<unknown> {
  const started = performance.now();
  const error = await within(FAULT_BOUND_MS, promise.then(() => undefined, (e: unknown) => e), what);
  expect(error, `${what} resolved`).toBeInstanceOf(TransportError);
  expect(performance.now() - started).toBeLessThan(FAULT_BOUND_MS);
  return error;
}

/**
 * The group is gone: SIGKILL went out before the call settled, but a process
 * that got it may still be exiting (not yet a zombie) on a loaded machine.
 */
async function treeGone(pgid: number): Promise<void> {
  await waitFor(() => envd.groupMembers(pgid).length === 0, FAULT_BOUND_MS, `group ${pgid} still has ${envd.groupMembers(pgid).join(', ')}`);
}

describe('transport faults', () => {
  it('the commandId is the command\'s pid from the supervisor\'s start report: the leader of its own session, under the one envd process', async () => {
    const sb = await sandbox();
    const before = envd.processes().length;
    await using proc = sb.stream(['sh', '-c', 'sleep 1']);
    expect(proc.commandId).toBeUndefined();
    await proc.started();
    const pid = Number(proc.commandId);
    // Its own session and group (fields 6 and 5 of /proc/<pid>/stat). The start is reported before
    // the command's exec of setsid, so that no byte of output can come first: under load the pid
    // is seen leading its session a moment after started() resolved.
    const leads = (): boolean => JSON.stringify(procStat(pid)?.slice(2, 4)) === JSON.stringify([String(pid), String(pid)]);
    await waitFor(leads, 10_000, `pid ${pid} leading its own session and group`);
    // One envd process for the command: its supervisor.
    expect(envd.processes().slice(before).map(isSupervisor)).toEqual([true]);
    // Its Start request carries no Connect-Timeout-Ms (envd would SIGKILL the supervisor alone when
    // it elapsed; the runtime's timeout bounds the command), and asks for keepalives.
    const start = envd.requests.filter(isSupervisorStart).at(-1);
    expect(start?.headers['connect-timeout-ms']).toBeUndefined();
    expect(start?.headers['keepalive-ping-interval']).toBe('1');
    expect(start?.headers['content-type']).toBe('application/connect+proto');
    expect(proc.pid).toBe(Number(proc.commandId));
  });

  it('connections cut mid-stream: a TransportError within a bound, and the remote tree is killed', async () => {
    const sb = await sandbox();
    const proc = sb.stream(['sh', '-c', TREE]);
    const { pgid, iterator } = await startTree(proc);
    envd.dropConnections();
    await expectRejects((async () => { for (;;) if ((await iterator.next()).done) return; })(), 'iteration after the cut');
    await expectRejects(proc.wait(), 'wait() after the cut');
    await treeGone(pgid);
  });

  it('a stream that goes silent (no keepalive) is broken after the stall bound, and the tree is killed', async () => {
    const sb = await sandbox();
    // After the start event, the supervisor's start report and the first output.
    envd.inject({ kind: 'stall', route: 'Start', at: 4, match: LAUNCHER });
    const proc = sb.stream(['sh', '-c', TREE]);
    await within(10_000, proc.started(), 'start');
    const pgid = Number(proc.commandId);
    await expectRejects(proc.wait(), 'wait() on a silent stream');
    await treeGone(pgid);
  });

  it('keepalives keep a quiet command alive past the stall bound', async () => {
    const sb = await sandbox();
    const result = await within(20_000, sb.run(['sh', '-c', `sleep ${(STALL_MS * 2) / 1000}; echo done`]), 'quiet command');
    expect(result.stdoutText).toBe('done\n');
    expect(result.exitCode).toBe(0);
  });

  it('an error where the end event should be: TransportError, tree killed', async () => {
    const sb = await sandbox();
    envd.inject({ kind: 'error', code: 'internal', at: 'before-end', route: 'Start', match: LAUNCHER });
    const proc = sb.stream(['sh', '-c', 'sleep 60 & echo $!; exit 0']);
    await within(10_000, proc.started(), 'start');
    const pgid = Number(proc.commandId);
    await expectRejects(proc.wait(), 'wait()');
    await treeGone(pgid);
  });

  it('Unavailable on Start: TransportError (outcome unknown), never retried', async () => {
    const sb = await sandbox();
    // Starts of the command itself; the helpers that clean up after it are other Starts.
    const starts = (): number =>
      envd.requests.filter((r) => r.route === 'Start' && JSON.stringify(r.body).includes('"never"')).length;
    envd.inject({ kind: 'error', code: 'unavailable', route: 'Start', match: LAUNCHER });
    await expectRejects(sb.run(['echo', 'never']), 'run()');
    expect(starts()).toBe(1);
  });

  it('a start cut before its start event: TransportError, not retried, and the command that did start is killed', async () => {
    const sb = await sandbox();
    const before = envd.processes().length;
    envd.inject({ kind: 'reset', at: 0, route: 'Start', match: LAUNCHER });
    await expectRejects(sb.run(['sh', '-c', 'sleep 60 & sleep 60']), 'run()');
    const started = envd.processes().slice(before).filter(isSupervisor);
    // Started once, never again, and found by its tag and killed, supervisor and tree.
    expect(started).toHaveLength(1);
    await waitFor(() => started[0]!.end !== undefined, 20_000, 'the orphaned start ended');
    await waitFor(() => leftovers(RUN_ID).length === 0, 20_000, `processes left: ${leftovers(RUN_ID).join('; ')}`);
  });

  it('a driver released while its start is pending (the runtime gave up) kills what did start', async () => {
    const transport = new EnvdTransport({ client: createProcessClient({ url: envd.url }), keepaliveSeconds: 1, stallMs: STALL_MS, requestTimeoutMs: 5_000 });
    const commands = new RemoteCommands({
      transport, env: {}, cwd: undefined, paths: DEFAULT_PATHS, requestTimeoutMs: 5_000, retry: DEFAULT_RETRY,
    });
    const driver = commands.createDriver({ argv: ['sh', '-c', 'sleep 60 & sleep 60'], env: {}, cwd: undefined, stdin: 'ignore', limits: undefined, user: undefined, pty: undefined });
    const before = envd.processes().length;
    const events = { output: () => undefined, exit: () => undefined, fail: () => undefined, leaderExited: () => undefined };
    driver.start(events).catch(() => undefined);
    await waitFor(() => envd.processes().slice(before).some(isSupervisor), 10_000, 'the command started');
    await within(FAULT_BOUND_MS, driver.release(), 'release()');
    const started = envd.processes().slice(before).find(isSupervisor)!;
    await waitFor(() => started.end !== undefined, 20_000, 'the abandoned command ended');
    await waitFor(() => leftovers(RUN_ID).length === 0, 20_000, `processes left: ${leftovers(RUN_ID).join('; ')}`);
  });

  it('a stdin write whose answer is lost: TransportError, later writes refused, end() still closes', async () => {
    const sb = await sandbox();
    const proc = sb.stream(['cat'], { stdin: 'pipe' });
    await within(10_000, proc.started(), 'start');
    await proc.stdin!.write('one\n');
    envd.inject({ kind: 'reset', served: true, route: 'SendInput' });
    const writes = envd.requests.filter((r) => r.route === 'SendInput').length;
    await expectRejects(proc.stdin!.write('two\n'), 'the uncertain write');
    await expectRejects(proc.stdin!.write('three\n'), 'a later write');
    // No blind resend: exactly one request per write that was attempted.
    expect(envd.requests.filter((r) => r.route === 'SendInput').length).toBe(writes + 1);
    await within(5_000, proc.stdin!.end(), 'end()');
    const chunks: string[] = [];
    for await (const chunk of proc) chunks.push(new TextDecoder().decode(chunk.data));
    // Delivered exactly once: "two" reached cat although its answer was lost.
    expect(chunks.join('')).toBe('one\ntwo\n');
    expect((await proc.wait()).exitCode).toBe(0);
  });
});
