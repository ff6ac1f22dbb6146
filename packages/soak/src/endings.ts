/**
 * The ways a consumer ends a soak command: it reads to the end (streamed or
 * buffered), or it leaves early by `break`, by a throw, by aborting its
 * signal, by a timeout, or by closing the whole sandbox the command runs in;
 * or the command is started by an owner process of its own, which is then
 * killed with SIGKILL (spec 1.4, SS-OWNER-1).
 * Where the target has `attach` (spec 1.2, ADR-0036), a command may also be
 * started in the background and detached, then read to its end through
 * `attach()`, killed by id, ended with its owner's `close()`, or waited for
 * and forgotten.
 */
import type { Rng } from './random.js';

export const ENDINGS = [
  'complete-stream',
  'complete-run',
  'break',
  'throw',
  'abort',
  'timeout',
  'close-sandbox',
  'owner-killed',
  'detach-attach',
  'kill-by-id',
  'owner-closed',
  'ended-forgotten',
] as const;
export type EndingName = (typeof ENDINGS)[number];

/** The endings of background commands: planned only where the target has `attach`, never for a command that reads stdin (a background command's is at end-of-file). */
export const BACKGROUND_ENDINGS = ['detach-attach', 'kill-by-id', 'owner-closed', 'ended-forgotten'] as const satisfies readonly EndingName[];
export type BackgroundEndingName = (typeof BACKGROUND_ENDINGS)[number];

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
  | { readonly kind: 'close-sandbox'; readonly atChunk: number; readonly companions: readonly string[] }
  /**
   * Started in the foreground by a child Node.js process of the soak (its owner), which reads
   * `atChunk` chunks and is then killed with SIGKILL: the command's tree must be gone within the
   * sandbox's `termination.ownerLossMs` (spec 1.4, section 9.11). The command always lingers.
   */
  | { readonly kind: 'owner-killed'; readonly atChunk: number }
  /** Started with `background: true`, `atChunk` chunks read, detached; then attached (replay) and read to its end. */
  | { readonly kind: 'detach-attach'; readonly atChunk: number }
  /** Started in the background, `atChunk` chunks read, detached; then attached with `{ replay: false }` and disposed: a kill by id. */
  | { readonly kind: 'kill-by-id'; readonly atChunk: number }
  /**
   * Started in the background in a sandbox of its own, with `companions` (background too, some
   * detached); after `atChunk` chunks the command is detached too if `detach`, and the sandbox is closed.
   */
  | {
      readonly kind: 'owner-closed';
      readonly atChunk: number;
      readonly detach: boolean;
      readonly companions: readonly { readonly script: string; readonly detach: boolean }[];
    }
  /** Started in the background and detached at once; its end awaited through `attach()`, then forgotten by disposal. */
  | { readonly kind: 'ended-forgotten' };

const WEIGHTS: Readonly<Record<Exclude<EndingName, BackgroundEndingName>, number>> = {
  'complete-stream': 3,
  'complete-run': 1,
  break: 1,
  throw: 1,
  abort: 1,
  timeout: 1,
  'close-sandbox': 0.7,
  'owner-killed': 0.7,
};

/**
 * With `attach`. The endings above keep their weights, so a target without
 * `attach` draws exactly as before: its seeds' plans and digests are unchanged.
 */
const BACKGROUND_WEIGHTS: Readonly<Record<EndingName, number>> = {
  ...WEIGHTS,
  'detach-attach': 1,
  'kill-by-id': 0.7,
  'owner-closed': 0.5,
  'ended-forgotten': 0.7,
};

/**
 * Picks an ending; `companion` plans one companion command of a closed
 * sandbox; `background`: the endings of background commands may be picked.
 */
export function planEnding(rng: Rng, companion: (rng: Rng) => string, background = false): EndingPlan {
  const kind: EndingName = background ? rng.weighted(BACKGROUND_WEIGHTS) : rng.weighted(WEIGHTS);
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
    case 'owner-killed':
      return { kind, atChunk: rng.int(0, 4) };
    case 'detach-attach':
    case 'kill-by-id':
      return { kind, atChunk: rng.int(0, 6) };
    case 'owner-closed': {
      const atChunk = rng.int(0, 4);
      const detach = rng.chance(0.5);
      const companions = Array.from({ length: rng.int(1, 3) }, () => ({ script: companion(rng), detach: rng.chance(0.7) }));
      return { kind, atChunk, detach, companions };
    }
    case 'ended-forgotten':
      return { kind };
  }
}

/** True for the endings that read the output to its end by design (their commands never linger). */
export function readsToEnd(ending: EndingPlan): boolean {
  return ending.kind === 'complete-stream' || ending.kind === 'complete-run' || ending.kind === 'detach-attach' || ending.kind === 'ended-forgotten';
}

/** True for the endings of background commands. */
export function isBackground(ending: EndingPlan): ending is Extract<EndingPlan, { kind: BackgroundEndingName }> {
  return (BACKGROUND_ENDINGS as readonly string[]).includes(ending.kind);
}
