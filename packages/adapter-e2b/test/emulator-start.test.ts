/**
 * How the envd emulator starts a command, as envd does
 * (packages/envd/internal/services/process/handler/handler.go, `New`, and
 * internal/permissions/path.go, `ExpandAndResolve`).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { killEach } from '@sandstream/test-support/processes';
import { createProcessClient } from '../src/connection.js';
import { startEnvdEmulator, type EnvdEmulator } from '../src/emulator/index.js';
import { leftovers, MARKER, newRunId, waitFor, within } from './helpers.js';

const RUN_ID = newRunId();
const configured = mkdtempSync(join(tmpdir(), 'sandstream-envd-workdir-'));
const relative = `sandstream-envd-relative-${RUN_ID}`;
let envd: EnvdEmulator;

beforeAll(async () => {
  mkdirSync(join(configured, relative));
  mkdirSync(join(homedir(), relative));
  envd = await startEnvdEmulator({ env: { [MARKER]: RUN_ID }, cwd: configured });
});
afterAll(async () => {
  await envd.close();
  rmSync(configured, { recursive: true, force: true });
  rmSync(join(homedir(), relative), { recursive: true, force: true });
  await waitFor(() => leftovers(RUN_ID).length === 0, 10_000, 'no process of the run left');
});

/** Runs `cmd args` to its end: stdout, stderr and the end event's exit code. */
async function run(cmd: string, args: string[], cwd?: string): Promise<{ stdout: string; stderr: string; exitCode: number | undefined }> {
  const client = createProcessClient({ url: envd.url });
  let stdout = '';
  let stderr = '';
  let exitCode: number | undefined;
  const events = client.start({ process: { cmd, args, envs: {}, ...(cwd === undefined ? {} : { cwd }) }, stdin: false }, {});
  await within(10_000, (async () => {
    for await (const { event } of events) {
      const e = event?.event;
      if (e?.case === 'data' && e.value.output.case === 'stdout') stdout += new TextDecoder().decode(e.value.output.value);
      if (e?.case === 'data' && e.value.output.case === 'stderr') stderr += new TextDecoder().decode(e.value.output.value);
      if (e?.case === 'end') exitCode = e.value.exitCode;
    }
  })(), `${cmd} to its end`);
  return { stdout, stderr, exitCode };
}

it('the working directory: the configured default when none is named, a relative one in the home, ~ the home', async () => {
  expect((await run('pwd', [])).stdout).toBe(`${configured}\n`);
  // Recorded with its route and timing: the stream's end is its answer's end.
  const start = envd.requests.filter((r) => r.route === 'Start').at(-1)!;
  await waitFor(() => start.endedAt !== undefined, 5_000, 'the Start answer stamped as ended');
  expect(start).toMatchObject({ method: 'POST', path: '/process.Process/Start', status: 200 });
  expect(start.endedAt!).toBeGreaterThanOrEqual(start.at);
  expect(envd.requestCounts()['Start']).toBeGreaterThanOrEqual(1);
  expect((await run('pwd', [], relative)).stdout).toBe(`${join(homedir(), relative)}\n`);
  expect((await run('pwd', [], '~')).stdout).toBe(`${homedir()}\n`);
  expect((await run('pwd', [], `~/${relative}`)).stdout).toBe(`${join(homedir(), relative)}\n`);
  await expect(run('pwd', [], '~root/x')).rejects.toThrow(/cannot expand user-specific home dir/);
});

it('a missing executable starts, as under envd\'s launch wrapper, says so on stderr and ends 127', async () => {
  const { stderr, exitCode } = await run('sandstream-no-such-executable', ['x']);
  expect(exitCode).toBe(127);
  expect(stderr).toMatch(/sandstream-no-such-executable: not found/);
  // The arguments reach the command exactly, with no shell interpretation.
  expect((await run('printf', ['%s|', 'a b', '$HOME', '*', ''])).stdout).toBe('a b|$HOME|*||');
});

it('its table finds a command\'s tree by the SANDSTREAM_COMMAND tag, a member that left the group included', async () => {
  const id = `tag-${RUN_ID}`;
  const client = createProcessClient({ url: envd.url });
  const events = client.start({ process: { cmd: '/bin/sh', args: ['-c', 'setsid sleep 30 & echo $!; wait'], envs: { SANDSTREAM_COMMAND: id } }, stdin: false }, {})[Symbol.asyncIterator]();
  const first = await within(10_000, events.next(), 'the start event');
  const start = first.value?.event?.event;
  if (start?.case !== 'start') throw new Error('expected the start event');
  // Tagged as soon as the shell forked, the child leaves the group only once it has run setsid.
  await waitFor(
    () => envd.tagged(id).length === 2 && envd.tagged(id).some((p) => p.pid !== start.value.pid && p.pgrp !== start.value.pid),
    10_000,
    'the leader and its escaped child, tagged, the child in a group of its own',
  );
  const tree = envd.tagged(id);
  expect(tree.map((p) => p.pid)).toContain(start.value.pid);
  expect(tree.find((p) => p.pid !== start.value.pid)?.pgrp).not.toBe(start.value.pid);
  killEach(tree);
  await waitFor(() => envd.tagged(id).length === 0, 10_000, 'the tree gone');
  await events.return?.();
});

it('output comes in data events of at most 32 KiB, as envd reads its pipes', async () => {
  const client = createProcessClient({ url: envd.url });
  const sizes: number[] = [];
  const events = client.start({ process: { cmd: 'head', args: ['-c', '1000000', '/dev/zero'], envs: {} }, stdin: false }, {});
  await within(10_000, (async () => {
    for await (const { event } of events) if (event?.event.case === 'data') sizes.push(event.event.value.output.value?.byteLength ?? 0);
  })(), 'the output');
  expect(sizes.reduce((a, b) => a + b, 0)).toBe(1_000_000);
  expect(Math.max(...sizes)).toBeLessThanOrEqual(32 * 1024);
});
