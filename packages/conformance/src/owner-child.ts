/**
 * The owner process of `owner.crash` (spec 1.4, SS-OWNER-1): a second OS
 * process that loads the adapter module as the CLI does, runs its setup
 * hook and factory, starts the command it is given in the foreground with
 * `stream()`, and reports on standard output once `started()` resolved. It
 * then holds the Process, reading its output, until the kit kills it with
 * SIGKILL: no disposal, no close(), no teardown hook ever runs.
 *
 * Argument: one JSON object, `{ "module": <file or package>, "argv": [...], "via": "stream" | "run" | "pty" }`;
 * with `run` (an adapter without streaming) it reports once run() was called, and the kit
 * waits until it sees the command; with `pty` the command has a terminal (spec 1.5).
 * Lines written: `{"started":{"pid":n,"commandId":s}}`, or `{"error":s}` before exiting 1.
 */
import type { Process } from '@sandstream/types';
import { loadAdapter } from './adapter-module.js';
import { ownerStreamOptions, type OwnerVia } from './owner-launcher.js';

/** What the kit passes to the owner process. */
export interface OwnerOrder {
  readonly module: string;
  readonly argv: readonly string[];
  /** How the command is started: see {@link OwnerVia}. */
  readonly via: OwnerVia;
}

/** A line the owner process writes. */
export type OwnerLine = { readonly started: { readonly pid: number | null; readonly commandId: string | null } } | { readonly error: string };

function say(line: OwnerLine): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

const held: Array<Process | Promise<unknown>> = [];

async function main(): Promise<void> {
  const order = JSON.parse(process.argv[2] ?? '') as OwnerOrder;
  const { factory, hooks } = await loadAdapter(order.module);
  await hooks.setup?.();
  const sandbox = await factory();
  if (order.via === 'run') {
    const running = sandbox.run(order.argv, { timeout: 3_600_000 });
    held.push(running);
    say({ started: { pid: null, commandId: null } });
    const result = await running;
    say({ error: `the command ended by itself before the owner was killed (exit ${result.exitCode}, signal ${result.signal})` });
    process.exit(1);
  }
  const proc = sandbox.stream(order.argv, ownerStreamOptions(order.via));
  // Held for the life of this process: the safety net must not end the command for it.
  held.push(proc);
  await proc.started();
  say({ started: { pid: proc.pid ?? null, commandId: proc.commandId ?? null } });
  // Reading keeps the output flowing; the command must not end for want of a reader.
  for await (const _chunk of proc) {
    // The kit reads nothing of it.
  }
  const result = await proc.wait();
  say({ error: `the command ended by itself before the owner was killed (exit ${result.exitCode}, signal ${result.signal})` });
  process.exit(1);
}

main().catch((error: unknown) => {
  say({ error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
  process.exit(1);
});
