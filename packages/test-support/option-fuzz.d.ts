import type { Sandbox } from '@sandstream/types';

/** fast-check settings of one property: the defaults unless SANDSTREAM_FUZZ_SEED / SANDSTREAM_FUZZ_RUNS / SANDSTREAM_FUZZ_SHRINK say otherwise. */
export declare function fuzzSettings(defaultRuns: number, defaultSeed?: number): { seed: number; numRuns: number; endOnFailure: boolean };

/** Options of {@link describeOptionFuzz}. */
export interface OptionFuzzOptions {
  /** Runs per property (default 20; SANDSTREAM_FUZZ_RUNS overrides). */
  readonly runs?: number;
  /** The fixed seed (SANDSTREAM_FUZZ_SEED overrides). */
  readonly seed?: number;
  /** A variable every command of the sandbox carries in its environment, so that leftovers are found. */
  readonly marker?: { readonly name: string; readonly value: string };
  /** The start requests the backend has received so far: a refused call must not add one. */
  readonly startCount?: () => number;
  /** Where the suite makes its working directories, visible inside the sandbox (default: the system's temporary directory). */
  readonly scratchParent?: string;
  /** Bound on one call (default 30 s). */
  readonly commandBoundMs?: number;
  /** Vitest timeout of each property (default 120 s). */
  readonly testTimeoutMs?: number;
}

/**
 * Defines the property-based suite of argv, env, cwd and options against a
 * sandbox from `openSandbox` (one for each property, closed at its end): each
 * input runs with an exact round trip of argv, environment and working
 * directory, or fails with the spec's typed error, within a bound, leaving
 * no process behind.
 */
export declare function describeOptionFuzz(
  name: string,
  openSandbox: () => Sandbox | Promise<Sandbox>,
  options?: OptionFuzzOptions,
): void;
