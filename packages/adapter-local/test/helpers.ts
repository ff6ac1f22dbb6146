/**
 * Shared test helpers. Importing this module also installs the leak checks
 * every test file runs under:
 *
 * - after each test, no live (non-zombie) process may carry this file's
 *   marker variable (`SANDSTREAM_TEST_RUN=<uuid>`), which every sandbox made
 *   by {@link testSandbox} puts in its base environment;
 * - after each test, this process's open file descriptors are back at the
 *   baseline taken once a first command has run (libuv opens a few
 *   descriptors for good on the first spawn).
 *
 * Sandboxes still open after a test are closed, but only after the process
 * scan, so a test that relies on `close()` to clean up what it should have
 * disposed itself still fails.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import {
  isLive,
  markedProcesses as findMarked,
  procStat,
  procState,
  type MarkedProcess,
} from '@sandstream/test-support/processes';
import { within } from '@sandstream/test-support/timing';
import { inheritedEnv } from '@sandstream/types/runtime';
import { decodeExecResult, encodeExecResult, type ExecResult, type OutputChunk, type Process, type Sandbox } from '@sandstream/types';
import { createLocalSandbox, type LocalNative, type LocalSandboxOptions } from '../src/index.js';

/** The marker variable every test sandbox puts in its base environment. */
export const MARKER = 'SANDSTREAM_TEST_RUN';
/** This test file's marker value. */
export const RUN_ID = randomUUID();
/** A short grace period, so SIGKILL paths stay quick. */
export const GRACE_MS = 250;
/** Node, for child scripts that need more than a shell. */
export const NODE = process.execPath;
/** A generous upper bound for "teardown did not hang": the grace period plus 2 s. */
export const TEARDOWN_BOUND_MS = GRACE_MS + 2_000;
/** Upper bound for "a whole command (start, run, end) did not hang", robust to a loaded machine. */
export const COMMAND_BOUND_MS = 10_000;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export { inheritedEnv };

const open = new Set<Sandbox<LocalNative>>();

/**
 * A local sandbox with a short grace period and this file's marker in its
 * base environment (added to `options.env` when given, so tests of the base
 * environment still see exactly what they passed, plus the marker).
 */
export function testSandbox(options: LocalSandboxOptions = {}): Sandbox<LocalNative> {
  const sandbox = createLocalSandbox({
    graceMs: GRACE_MS,
    ...options,
    env: { ...(options.env ?? inheritedEnv()), [MARKER]: RUN_ID },
  });
  open.add(sandbox);
  return sandbox;
}

/** `node -e <script> ...args` as an argv. */
export function nodeScript(script: string, ...args: string[]): string[] {
  return [NODE, '-e', script, ...args];
}

export { procStat, procState, within };

/** True while the process exists and is not a zombie. */
export const isAlive = isLive;

/** Live processes whose environment carries `MARKER=value`. */
export function markedProcesses(value = RUN_ID): MarkedProcess[] {
  return findMarked(MARKER, value);
}

/** Open file descriptors of this process. */
export function fdCount(): number {
  return readdirSync('/proc/self/fd').length;
}

/** Polls `check` until it returns true or `ms` elapse; returns its last answer. */
export async function eventually(check: () => boolean, ms = 1_000, every = 20): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (check()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(every);
  }
}

/** Collects a Process's chunks, per stream and in arrival order. */
export async function collect(proc: AsyncIterable<OutputChunk>): Promise<{
  chunks: OutputChunk[];
  stdout: Uint8Array;
  stderr: Uint8Array;
  stdoutText: string;
  stderrText: string;
}> {
  const chunks: OutputChunk[] = [];
  for await (const chunk of proc) chunks.push(chunk);
  const stdout = concat(chunks.filter((c) => c.stream === 'stdout').map((c) => c.data));
  const stderr = concat(chunks.filter((c) => c.stream === 'stderr').map((c) => c.data));
  return { chunks, stdout, stderr, stdoutText: decoder.decode(stdout), stderrText: decoder.decode(stderr) };
}

export function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}

export function bytes(text: string): Uint8Array {
  return encoder.encode(text);
}

export function text(data: Uint8Array): string {
  return decoder.decode(data);
}

/**
 * Reads chunks until the stdout text seen so far satisfies `until`; returns
 * that text. Leaves the iterator open (the caller keeps reading or disposes).
 */
export async function readUntil(
  iterator: AsyncIterator<OutputChunk, undefined>,
  until: (stdout: string) => boolean,
): Promise<string> {
  let seen = '';
  while (!until(seen)) {
    const next = await iterator.next();
    if (next.done) throw new Error(`output ended before the expected text; got ${JSON.stringify(seen)}`);
    if (next.value.stream === 'stdout') seen += decoder.decode(next.value.data);
  }
  return seen;
}

/** Starts `sh -c 'echo $$; ...'`-style commands and returns the pid they print first. */
export async function firstLinePid(proc: Process): Promise<{ pid: number; iterator: AsyncIterator<OutputChunk, undefined> }> {
  const iterator = proc[Symbol.asyncIterator]();
  const seen = await readUntil(iterator, (s) => s.includes('\n'));
  return { pid: Number(seen.split('\n')[0]), iterator };
}

/** Asserts the result round-trips through the spec's ExecResult schema. */
export function expectValidResult(result: ExecResult): void {
  expect(() => decodeExecResult(JSON.parse(JSON.stringify(encodeExecResult(result))))).not.toThrow();
}

// ---- leak checks ----------------------------------------------------------

let fdBaseline = 0;

beforeAll(async () => {
  // Warm up: the first spawn opens descriptors libuv keeps for good.
  const warm = createLocalSandbox({ env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' } });
  await warm.run(['true']);
  await warm.close();
  // The first isolated sandbox starts the process's janitor (src/isolation/janitor.ts), whose pipe
  // stays open for good, as the skeleton it removes stays. Where isolation is unavailable, nothing.
  let isolated: Sandbox | undefined;
  try {
    isolated = createLocalSandbox({ isolation: 'namespaces' });
  } catch {
    // IsolationUnavailable: the isolated tests say so themselves
  }
  if (isolated !== undefined) {
    await isolated.run(['true']).catch(() => undefined);
    await isolated.close();
  }
  fdBaseline = fdCount();
});

afterEach(async () => {
  await eventually(() => markedProcesses().length === 0, 1_000);
  const survivors = markedProcesses();
  await Promise.allSettled([...open].map((sandbox) => sandbox.close()));
  open.clear();
  // Kill what survived so that one failure does not cascade into the next tests.
  for (const { pid } of markedProcesses()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  expect(survivors, 'processes outlived the test').toEqual([]);
  await eventually(() => fdCount() <= fdBaseline, 2_000);
  expect(fdCount(), 'file descriptors leaked').toBeLessThanOrEqual(fdBaseline);
});

afterAll(async () => {
  await Promise.allSettled([...open].map((sandbox) => sandbox.close()));
  expect(markedProcesses()).toEqual([]);
});

/** Why shellcheck cannot check the adapter's sh here, or undefined where it can (CI installs it). */
export const shellcheckMissing = spawnSync('shellcheck', ['--version']).status === 0 ? undefined : 'shellcheck is not installed';

/** What `shellcheck -s sh` says of `script` (nothing when it is clean), and its exit status. */
export function shellcheckSh(script: string): { readonly said: string; readonly status: number | null } {
  const dir = mkdtempSync(join(tmpdir(), 'sandstream-shellcheck-'));
  try {
    const file = join(dir, 'script.sh');
    writeFileSync(file, script);
    const checked = spawnSync('shellcheck', ['-s', 'sh', file], { encoding: 'utf8' });
    return { said: checked.stdout + checked.stderr, status: checked.status };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
