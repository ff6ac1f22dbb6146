/**
 * How a run starts an owner process (spec 1.4, `owner.crash`): the engine
 * passes a launcher to the cases (the kit's own, or a testee's second
 * instance), so its type lives with the engine.
 */
import type { CaseContext } from './context.js';

/** An owner process a launcher started (spec 1.4, `owner.crash`), for the case to crash. */
export interface LaunchedOwner {
  /** Kills it with SIGKILL and resolves when it is gone: the moment of the loss. */
  crash(): Promise<number>;
  /** Kills it, if it still runs, and releases what the kit holds of it; never throws. */
  dispose(): Promise<void>;
}

/**
 * Starts an owner process with the environment `env` added, which starts
 * `argv` in the foreground (with `stream()`, or `run()` for an adapter
 * without streaming, or, `'pty'`, with `stream()` on a terminal of
 * {@link OWNER_TERMINAL}, spec 1.5) and resolves once it reported the command started,
 * within `withinMs`; rejects with a HarnessError. The kit's own launcher
 * starts a Node.js process that loads the adapter module (`ownerModule`); a
 * run through a testee starts a second instance of the testee (spec 1.4
 * section 18.6). A case reads it from {@link CaseContext.launchOwner}.
 *
 * @example
 * ```ts
 * import type { CaseContext, OwnerLauncher } from '@sandstream/conformance';
 * async function crashOne(ctx: CaseContext, launch: OwnerLauncher): Promise<number> {
 *   const owner = await launch({}, ['sleep', '300'], 'stream', 30_000);
 *   try {
 *     return await owner.crash();
 *   } finally {
 *     await owner.dispose();
 *   }
 * }
 * ```
 */
export type OwnerLauncher = (env: Readonly<Record<string, string>>, argv: readonly string[], via: OwnerVia, withinMs: number) => Promise<LaunchedOwner>;

/**
 * How an owner process starts its command: `stream()` (and `started()`), `run()` for an adapter
 * without the `streaming` capability, or `pty`: `stream()` on a terminal of {@link OWNER_TERMINAL}
 * (spec 1.5, `pty.owner-crash`).
 */
export type OwnerVia = 'stream' | 'run' | 'pty';

/** The terminal an owner process asks for under `pty` (its size is of no consequence to the case). */
export const OWNER_TERMINAL = Object.freeze({ cols: 80, rows: 24 });

/** The options an owner process gives `stream()` under `via` (`run` takes none but its timeout). */
export function ownerStreamOptions(via: OwnerVia): { pty?: { cols: number; rows: number } } {
  return via === 'pty' ? { pty: { ...OWNER_TERMINAL } } : {};
}
