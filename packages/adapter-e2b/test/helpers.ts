/**
 * Shared test helpers: bounded waits (a verdict never comes from a fixed
 * sleep: a wait polls for its condition and fails only after a generous
 * bound), and a leak check over processes carrying this file's marker.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { markedProcesses } from '@sandstream/test-support/processes';

/** The marker variable every emulated sandbox puts in its commands' environment. */
export const MARKER = 'SANDSTREAM_TEST_RUN';
/** A fresh marker value per test file. */
export function newRunId(): string {
  return randomUUID();
}

export { waitFor, within } from '@sandstream/test-support/timing';

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

/** The argv words of a recorded Start (after its program). */
function startArgs(request: { readonly body: unknown }): string[] {
  return (request.body as { process?: { args?: string[] } } | null)?.process?.args ?? [];
}

/** The Start of a command itself: the supervisor (`sh -c SUPERVISOR sandstream-supervisor ...`). */
export function isSupervisorStart(request: { readonly route?: string | undefined; readonly body: unknown }): boolean {
  return request.route === 'Start' && startArgs(request)[2] === 'sandstream-supervisor';
}

/** The Start of a helper command in the given mode (`signal`, `kill`, `sweep`, `abandon`, `lease`: an owner lease's renewal). */
export function isHelperStart(mode: 'signal' | 'kill' | 'sweep' | 'abandon' | 'lease') {
  return (request: { readonly route?: string | undefined; readonly body: unknown }): boolean => {
    const args = startArgs(request);
    return request.route === 'Start' && args[2] === 'sandstream-helper' && args[3] === mode;
  };
}
