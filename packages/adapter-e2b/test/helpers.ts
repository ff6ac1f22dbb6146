/**
 * Shared test helpers: bounded waits (a verdict never comes from a fixed
 * sleep: a wait polls for its condition and fails only after a generous
 * bound), and a leak check over processes carrying this file's marker.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { markedProcesses } from '@sandstream/test-support/processes';

/** The marker variable every emulated sandbox puts in its commands' environment. */
export const MARKER = 'SANDSTREAM_TEST_RUN';
/** A fresh marker value per test file. */
export function newRunId(): string {
  return randomUUID();
}

export { within } from '@sandstream/test-support/timing';

/** Polls `condition` until it holds; throws after `ms`. */
export async function waitFor(condition: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  let delay = 2;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`${what}: still not true after ${ms} ms`);
    await sleep(delay);
    delay = Math.min(delay * 2, 50);
  }
}

/** Live processes still carrying this marker value. */
export function leftovers(runId: string): string[] {
  return markedProcesses(MARKER, runId).map((p) => `${p.pid} ${p.cmdline}`);
}

/** True while `pid` exists and is not a zombie. */
export { isLive } from '@sandstream/test-support/processes';

/**
 * An empty home directory for the SDK's `bash -l` commands, so that what
 * this machine's own profile runs at login (a version manager's hooks, say)
 * does not become part of the test.
 */
export function emptyHome(): string {
  return mkdtempSync(join(tmpdir(), 'sandstream-e2b-home-'));
}
