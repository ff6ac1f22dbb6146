import { Type, type Static } from '@sinclair/typebox';
import { definition } from './definition.js';
import { CapabilityManifest } from './capability.js';

const REQUIREMENT_ID = '^SS-[A-Z]+(?:-[A-Z]+)*-[0-9]+$';

/**
 * The outcome of one conformance case.
 *
 * - `pass` / `fail`: the case ran and the adapter did or did not behave as required.
 * - `skipped`: the case does not apply to the adapter's manifest (it needs an optional
 *   capability the adapter does not advertise, or checks the absence of one it does).
 * - `disabled`: the user excluded the case.
 * - `error`: the harness itself failed; this says nothing about the adapter.
 */
export const CaseStatus = definition(
  'CaseStatus',
  'The outcome of one conformance case: pass, fail, skipped (the manifest makes it inapplicable), disabled (the user excluded it) or error (the harness failed).',
  Type.Union([
    Type.Literal('pass'),
    Type.Literal('fail'),
    Type.Literal('skipped'),
    Type.Literal('disabled'),
    Type.Literal('error'),
  ]),
);
export type CaseStatus = Static<typeof CaseStatus>;

/** One case's line in a {@link ConformanceReport}. */
export const CaseResult = definition(
  'CaseResult',
  "One case's line in a ConformanceReport.",
  Type.Object(
    {
      id: Type.String({ pattern: '^[a-z0-9]+(?:[.-][a-z0-9]+)*$', description: 'Stable case id.' }),
      title: Type.String({ minLength: 1, description: 'What the case checks, in words.' }),
      requirements: Type.Array(Type.String({ pattern: REQUIREMENT_ID }), {
        minItems: 1,
        uniqueItems: true,
        description: 'The spec requirement ids this case proves.',
      }),
      status: CaseStatus,
      expectedFailure: Type.Boolean({
        description: 'True when the adapter listed this case as a known failure.',
      }),
      durationMs: Type.Number({ minimum: 0, description: 'Wall-clock milliseconds the case took.' }),
      message: Type.Optional(Type.String({ description: 'Why it failed, was skipped, or errored.' })),
      blocking: Type.Optional(
        Type.Boolean({
          description:
            'Spec 1.3: true when this result alone makes the run fail (an error, or a failure neither listed as expected nor advisory); a kit of 1.3 or later always states it.',
        }),
      ),
    },
    { additionalProperties: false },
  ),
);
export type CaseResult = Static<typeof CaseResult>;

/**
 * The conformance kit's machine-readable report. The JSON reporter writes
 * exactly this shape, and the kit validates it before writing.
 */
export const ConformanceReport = definition(
  'ConformanceReport',
  "The conformance kit's machine-readable report.",
  Type.Object(
    {
      specVersion: Type.String({
        pattern: '^[0-9]+\\.[0-9]+$',
        description: 'The spec revision whose requirements the kit checked (major.minor).',
      }),
      kitVersion: Type.String({
        pattern: '^[0-9]+\\.[0-9]+\\.[0-9]+(?:-[0-9A-Za-z.-]+)?$',
        description: "The kit's own version (semver).",
      }),
      adapter: Type.Object(
        {
          name: Type.String({ minLength: 1, description: "The adapter's Sandbox.name." }),
          capabilities: CapabilityManifest,
        },
        { additionalProperties: false, description: 'The adapter judged.' },
      ),
      startedAt: Type.String({ format: 'date-time', description: 'When the run started (RFC 3339).' }),
      durationMs: Type.Number({ minimum: 0, description: 'Wall-clock milliseconds of the whole run.' }),
      summary: Type.Object(
        {
          pass: Type.Integer({ minimum: 0 }),
          fail: Type.Integer({ minimum: 0 }),
          skipped: Type.Integer({ minimum: 0 }),
          disabled: Type.Integer({ minimum: 0 }),
          error: Type.Integer({ minimum: 0 }),
          expectedFailures: Type.Integer({ minimum: 0 }),
          staleExpectedFailures: Type.Array(Type.String(), {
            description: 'Cases listed as expected failures that passed or no longer exist.',
          }),
        },
        { additionalProperties: false, description: 'How many cases ended with each status.' },
      ),
      ok: Type.Boolean({
        description:
          'True when no case that ran failed (other than as expected, or as advisory SHOULD), none errored, and no expected failure is stale. Cases the user disabled are not judged: a conformance claim needs none disabled.',
      }),
      cases: Type.Array(CaseResult, { description: 'One line per case, in run order.' }),
    },
    { additionalProperties: false },
  ),
);
export type ConformanceReport = Static<typeof ConformanceReport>;
