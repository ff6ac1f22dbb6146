/**
 * The ways a consumer ends a soak command: it reads to the end (streamed or
 * buffered), or it leaves early by `break`, by a throw, by aborting its
 * signal, by a timeout, or by closing the whole sandbox the command runs in.
 */
import type { Rng } from './random.js';

export const ENDINGS = ['complete-stream', 'complete-run', 'break', 'throw', 'abort', 'timeout', 'close-sandbox'] as const;
export type EndingName = (typeof ENDINGS)[number];

/** One planned ending. `atChunk` counts chunks read before the consumer acts (it acts at the end of output when there are fewer). */
export type EndingPlan =
  | { readonly kind: 'complete-stream' }
  | { readonly kind: 'complete-run' }
  | { readonly kind: 'break'; readonly atChunk: number }
  | { readonly kind: 'throw'; readonly atChunk: number }
  /** `before`: the signal has fired before `stream()` is called, so nothing may start. */
  | { readonly kind: 'abort'; readonly atChunk: number; readonly before: boolean }
  | { readonly kind: 'timeout'; readonly ms: number }
  /** The command runs in a sandbox of its own with `companions` (silent, lingering commands nobody reads); the sandbox is closed after `atChunk` chunks. */
  | { readonly kind: 'close-sandbox'; readonly atChunk: number; readonly companions: readonly string[] };

const WEIGHTS: Readonly<Record<EndingName, number>> = {
  'complete-stream': 3,
  'complete-run': 1,
  break: 1,
  throw: 1,
  abort: 1,
  timeout: 1,
  'close-sandbox': 0.7,
};

/** Picks an ending; `companion` plans one companion command of a closed sandbox. */
export function planEnding(rng: Rng, companion: (rng: Rng) => string): EndingPlan {
  const kind = rng.weighted(WEIGHTS);
  switch (kind) {
    case 'complete-stream':
    case 'complete-run':
      return { kind };
    case 'break':
    case 'throw':
      return { kind, atChunk: rng.int(0, 6) };
    case 'abort':
      return { kind, atChunk: rng.int(0, 6), before: rng.chance(0.05) };
    case 'timeout':
      return { kind, ms: rng.int(20, 600) };
    case 'close-sandbox': {
      const atChunk = rng.int(0, 4);
      const companions = Array.from({ length: rng.int(0, 2) }, () => companion(rng));
      return { kind, atChunk, companions };
    }
  }
}

/** True for the endings that read the output to its end by design. */
export function readsToEnd(ending: EndingPlan): boolean {
  return ending.kind === 'complete-stream' || ending.kind === 'complete-run';
}
