/**
 * The owner processes of the owner-loss tests: each a Node.js process
 * running test/fixtures/owner.mjs on the built package, which the tests
 * kill with SIGKILL once its commands run, and find the processes of by
 * the token in their environment.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { onTestFinished } from 'vitest';
import { killEach, markedProcesses } from '@sandstream/test-support/processes';
import { waitFor, within } from '@sandstream/test-support/timing';
import { isAlive, MARKER, NODE, RUN_ID } from './helpers.js';

const OWNER = new URL('./fixtures/owner.mjs', import.meta.url).pathname;
/** The variable that names each owner's commands: `<token>-<role>`. */
const TOKEN = 'SANDSTREAM_OWNER_TOKEN';
/** The grace period of the owners' sandboxes. */
export const OWNER_GRACE_MS = 500;
/** What the owners' sandboxes promise: their grace period plus 1 s. */
export const OWNER_LOSS_MS = OWNER_GRACE_MS + 1_000;
/** What these tests add to the promise before they fail: generous, for a loaded machine. */
const SLOW_MACHINE_MS = 15_000;
/** A shell that leaves two children in its group. */
export const TREE = ['sh', '-c', 'sleep 300 & sleep 301'];

export interface OwnerReport {
  readonly pids: Record<string, number>;
  readonly guardians: number[];
  readonly termination: { readonly graceMs: number; readonly ownerLossMs?: number };
  readonly unguardedTermination?: { readonly ownerLossMs?: number };
}

/** Live processes of an owner's commands: of one role, or of all. */
export function commandProcesses(token: string, role?: string): number[] {
  const found = role === undefined ? markedProcesses(TOKEN, `${token}-`, { prefix: true }) : markedProcesses(TOKEN, `${token}-${role}`);
  return found.map((entry) => entry.pid);
}

/** Signals `pid` if it is still a guardian (its number was not given out again). */
function killGuardian(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    if (readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes('sandstream-guardian')) process.kill(pid, 'SIGKILL');
  } catch {
    // gone
  }
}

/** What an isolated owner is given besides: its sandbox's mounts, or the init of the environment it joins. */
export interface OwnerExtra {
  readonly mounts?: readonly { readonly source: string; readonly readonly?: boolean }[];
  readonly join?: number;
}

/**
 * Starts an owner in `mode` running `argv`; resolves with its report once
 * its commands run. However the test ends, the owner, its guardians and
 * every process of its commands are killed, by pid.
 */
export async function startOwner(
  mode: string,
  argv: readonly string[],
  graceMs = OWNER_GRACE_MS,
  extra: OwnerExtra = {},
): Promise<{ owner: ChildProcess; report: OwnerReport; token: string }> {
  const token = randomUUID();
  const config = { mode, token, graceMs, env: { [MARKER]: RUN_ID }, argv, ...extra };
  const owner = spawn(NODE, [OWNER, JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let report: OwnerReport | undefined;
  onTestFinished(() => {
    owner.kill('SIGKILL');
    for (const pid of report?.guardians ?? []) killGuardian(pid);
    killEach(commandProcesses(token).map((pid) => ({ pid })));
  });
  const line = new Promise<string>((resolve, reject) => {
    createInterface({ input: owner.stdout! }).once('line', resolve);
    owner.once('close', (code, signal) => reject(new Error(`the owner ended (${code ?? signal}) before its report`)));
  });
  report = JSON.parse(await within(30_000, line, "the owner's report")) as OwnerReport;
  return { owner, report, token };
}

/** Waits until `roles` each have `count` live processes (a shell and its children). */
export async function running(token: string, roles: readonly string[], count = 3): Promise<void> {
  await waitFor(() => roles.every((role) => commandProcesses(token, role).length === count), 10_000, `the commands ${roles.join(', ')} running`);
}

/**
 * SIGKILLs the owner; resolves with the ms until none of its commands'
 * processes is live, within a generous bound past `ownerLossMs`.
 */
export async function killOwnerAndWait(owner: ChildProcess, token: string, roles: readonly string[], ownerLossMs = OWNER_LOSS_MS): Promise<number> {
  const tree = roles.flatMap((role) => commandProcesses(token, role));
  const killedAt = Date.now();
  owner.kill('SIGKILL');
  await waitFor(
    () => tree.every((pid) => !isAlive(pid)) && roles.every((role) => commandProcesses(token, role).length === 0),
    ownerLossMs + SLOW_MACHINE_MS,
    `the owner's commands gone (promised within ${ownerLossMs} ms)`,
  );
  const elapsed = Date.now() - killedAt;
  // The promise itself is not asserted here: a loaded machine may be late.
  if (elapsed > ownerLossMs) console.log(`the owner's commands took ${elapsed} ms to end, past ownerLossMs ${ownerLossMs}`);
  return elapsed;
}
