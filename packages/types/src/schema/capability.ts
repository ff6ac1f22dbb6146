import { Type, type Static } from '@sinclair/typebox';
import { definition } from './bytes.js';

/**
 * An optional feature an adapter may advertise. A capability enters the spec
 * only once two backends support it (ADR-0002).
 *
 * - `streaming`: `Sandbox.stream()` returns a live {@link Process}.
 * - `stdin`: the `stdin: 'pipe'` writer and one-shot `input` bytes.
 * - `resource-limits`: the `limits` option (CPU seconds, address space, file size, open files).
 * - `user`: the `user` option, running the command as another account.
 */
export const Capability = definition(
  'Capability',
  Type.Union(
    [
      Type.Literal('streaming'),
      Type.Literal('stdin'),
      Type.Literal('resource-limits'),
      Type.Literal('user'),
    ],
    { description: 'An optional feature an adapter may advertise.' },
  ),
);
export type Capability = Static<typeof Capability>;

/** Every capability defined by this spec version, in manifest order. */
export const CAPABILITIES: readonly Capability[] = Object.freeze([
  'streaming',
  'stdin',
  'resource-limits',
  'user',
]);

/**
 * What an adapter supports: one boolean per capability of the spec, plus
 * vendor extensions under an `x-` prefix that the conformance kit ignores.
 *
 * @example
 * ```ts
 * import type { CapabilityManifest } from '@sandstream/types';
 * const manifest: CapabilityManifest = {
 *   streaming: true, stdin: true, 'resource-limits': false, user: false,
 * };
 * ```
 */
export const CapabilityManifest = definition(
  'CapabilityManifest',
  Type.Object(
    {
      streaming: Type.Boolean(),
      stdin: Type.Boolean(),
      'resource-limits': Type.Boolean(),
      user: Type.Boolean(),
    },
    {
      additionalProperties: false,
      patternProperties: { '^x-[a-z0-9-]+$': { type: 'boolean' } },
      description: 'The capabilities an adapter advertises.',
    },
  ),
);
/** The manifest's static type: the spec's capabilities plus optional `x-` vendor extensions. */
export type CapabilityManifest = Static<typeof CapabilityManifest> & { [vendor: `x-${string}`]: boolean };
