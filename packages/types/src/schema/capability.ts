import { Type, type Static } from '@sinclair/typebox';
import { definition } from './definition.js';

/**
 * An optional feature an adapter may advertise. A capability enters the spec
 * only once two backends support it (ADR-0002).
 *
 * - `streaming`: `Sandbox.stream()` returns a live {@link Process}.
 * - `stdin`: the `stdin: 'pipe'` writer and one-shot `input` bytes.
 * - `resource-limits`: the `limits` option (CPU seconds, address space, file size, open files).
 * - `user`: the `user` option, running the command as another account.
 * - `binary-output` (1.1): output is delivered byte-exact. A backend whose
 *   wire carries only text states `false`; its output is then valid UTF-8,
 *   with invalid input replaced as the WHATWG decoder does (ADR-0013).
 * - `attach` (1.2): background commands owned by the sandbox,
 *   `Sandbox.attach()`, `Sandbox.commands()` and `detach()` (ADR-0036).
 * - `attach-reconnect` (1.2): also from a new handle built from the
 *   environment's id alone, in another OS process too.
 * - `replay-full` (1.2): attaching delivers every byte from the first.
 * - `replay-tail` (1.2): attaching delivers at least the last 1 MiB of each
 *   stream, the skipped bytes counted exactly.
 * - `pty` (1.5): the `pty` option runs a command on a pseudo-terminal, and
 *   `Process.resize()` sets its size (ADR-0052).
 */
export const Capability = definition(
  'Capability',
  'An optional feature an adapter may advertise.',
  Type.Union([
    Type.Literal('streaming'),
    Type.Literal('stdin'),
    Type.Literal('resource-limits'),
    Type.Literal('user'),
    Type.Literal('binary-output'),
    Type.Literal('attach'),
    Type.Literal('attach-reconnect'),
    Type.Literal('replay-full'),
    Type.Literal('replay-tail'),
    Type.Literal('pty'),
  ]),
);
export type Capability = Static<typeof Capability>;

/** Every capability defined by this spec version, in manifest order. */
export const CAPABILITIES: readonly Capability[] = Object.freeze([
  'streaming',
  'stdin',
  'resource-limits',
  'user',
  'binary-output',
  'attach',
  'attach-reconnect',
  'replay-full',
  'replay-tail',
  'pty',
]);

/** The capabilities added in 1.2 (ADR-0036): optional in a manifest, absent meaning `false`. */
export const ATTACH_CAPABILITIES = Object.freeze(['attach', 'attach-reconnect', 'replay-full', 'replay-tail'] as const);

/**
 * The capabilities a manifest may leave out, with the value an absent key
 * means. `binary-output` arrived in 1.1; a 1.0 manifest omits it and meant
 * byte-exact output, so absent is `true`.
 */
export const CAPABILITY_DEFAULTS: Readonly<Partial<Record<Capability, boolean>>> = Object.freeze({
  'binary-output': true,
});

/**
 * Whether a manifest advertises a capability, an optional one's default
 * applied. Use it rather than `manifest[capability]`, which is `undefined`
 * for an optional capability left out.
 *
 * @example
 * ```ts
 * import { hasCapability } from '@sandstream/types';
 * hasCapability({ streaming: true, stdin: true, 'resource-limits': false, user: false }, 'binary-output'); // true
 * ```
 */
export function hasCapability(manifest: Readonly<Partial<Record<Capability, boolean>>>, capability: Capability): boolean {
  // Own properties only: a name such as `toString` or `__proto__` (a manifest or
  // a name read off a wire) must not find what Object.prototype holds.
  const value: unknown = Object.hasOwn(manifest, capability) ? manifest[capability] : undefined;
  if (typeof value === 'boolean') return value;
  return Object.hasOwn(CAPABILITY_DEFAULTS, capability) ? CAPABILITY_DEFAULTS[capability] === true : false;
}

/**
 * What an adapter supports: one boolean per capability of the spec, plus
 * vendor extensions under an `x-` prefix that the conformance kit ignores.
 * `binary-output` is optional and absent means `true`; the 1.2 capabilities
 * (`attach`, `attach-reconnect`, `replay-full`, `replay-tail`) and `pty` (1.5)
 * are optional and absent means `false`. The schema holds them together: `attach-reconnect`,
 * `replay-full` and `replay-tail` are `true` only with `attach` `true`, and at
 * most one of the two replays is `true` (spec 1.2, SS-CAP-3).
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
  'The capabilities an adapter advertises: one boolean per capability of the spec (binary-output may be left out, meaning true; attach, attach-reconnect, replay-full, replay-tail and pty may be left out, meaning false), plus x- vendor extensions. attach-reconnect, replay-full and replay-tail need attach, and replay-full and replay-tail exclude each other.',
  Type.Object(
    {
      streaming: Type.Boolean({ description: 'stream() returns a live Process.' }),
      stdin: Type.Boolean({ description: "Standard input: stdin: 'pipe' and the input option." }),
      'resource-limits': Type.Boolean({ description: 'The limits option.' }),
      user: Type.Boolean({ description: 'The user option.' }),
      'binary-output': Type.Optional(
        Type.Boolean({
          description:
            'Output is byte-exact (added in 1.1). Absent means true. False: output is valid UTF-8, invalid input replaced as the WHATWG UTF-8 decoder does.',
        }),
      ),
      attach: Type.Optional(
        Type.Boolean({ description: 'Background commands, attach(), commands() and detach() (added in 1.2). Absent means false.' }),
      ),
      'attach-reconnect': Type.Optional(
        Type.Boolean({ description: "Attach and list from a new handle built from the environment's id alone (added in 1.2; needs attach). Absent means false." }),
      ),
      'replay-full': Type.Optional(
        Type.Boolean({ description: 'Attaching replays every byte from the first (added in 1.2; needs attach; not with replay-tail). Absent means false.' }),
      ),
      'replay-tail': Type.Optional(
        Type.Boolean({
          description: 'Attaching replays at least the last 1 MiB of each stream and counts the rest (added in 1.2; needs attach; not with replay-full). Absent means false.',
        }),
      ),
      pty: Type.Optional(
        Type.Boolean({ description: 'The pty option runs a command on a pseudo-terminal, and a Process can be resized (added in 1.5). Absent means false.' }),
      ),
    },
    {
      additionalProperties: false,
      patternProperties: { '^x-[a-z0-9-]+$': { type: 'boolean' } },
      // The 1.2 promises that depend on each other (ADR-0036): a replay or a
      // reconnect is a promise about attaching, and the two replays exclude
      // each other. Every subschema names the keys it requires in its own
      // `properties` (ajv's strictRequired), and none closes an object, so
      // the reader document keeps these rules while it opens the manifest.
      allOf: [
        {
          description: 'attach-reconnect, replay-full and replay-tail are true only with attach true (absent means false).',
          if: { not: { required: ['attach'], properties: { attach: { const: true } } } },
          then: {
            properties: {
              'attach-reconnect': { const: false },
              'replay-full': { const: false },
              'replay-tail': { const: false },
            },
          },
        },
        {
          description: 'replay-full and replay-tail are not both true.',
          if: { required: ['replay-full'], properties: { 'replay-full': { const: true } } },
          then: { properties: { 'replay-tail': { const: false } } },
        },
      ],
    },
  ),
);
/** The manifest's static type: the spec's capabilities plus optional `x-` vendor extensions. */
export type CapabilityManifest = Static<typeof CapabilityManifest> & { [vendor: `x-${string}`]: boolean };
