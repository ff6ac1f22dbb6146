import { Type, type Static } from '@sinclair/typebox';
import { definition } from './bytes.js';
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
  Type.Object(
    {
      id: Type.String({ pattern: '^[a-z0-9]+(?:[.-][a-z0-9]+)*$', description: 'Stable case id.' }),
      title: Type.String({ minLength: 1 }),
      requirements: Type.Array(Type.String({ pattern: REQUIREMENT_ID }), {
        minItems: 1,
        uniqueItems: true,
        description: 'The spec requirement ids this case proves.',
      }),
      status: CaseStatus,
      expectedFailure: Type.Boolean({
        description: 'True when the adapter listed this case as a known failure.',
      }),
      durationMs: Type.Number({ minimum: 0 }),
      message: Type.Optional(Type.String({ description: 'Why it failed, was skipped, or errored.' })),
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
  Type.Object(
    {
      specVersion: Type.String({ pattern: '^[0-9]+\\.[0-9]+$' }),
      kitVersion: Type.String({ pattern: '^[0-9]+\\.[0-9]+\\.[0-9]+(?:-[0-9A-Za-z.-]+)?$' }),
      adapter: Type.Object(
        {
          name: Type.String({ minLength: 1 }),
          capabilities: CapabilityManifest,
        },
        { additionalProperties: false },
      ),
      startedAt: Type.String({ format: 'date-time' }),
      durationMs: Type.Number({ minimum: 0 }),
      summary: Type.Object(
        {
          pass: Type.Integer({ minimum: 0 }),
          fail: Type.Integer({ minimum: 0 }),
          skipped: Type.Integer({ minimum: 0 }),
          disabled: Type.Integer({ minimum: 0 }),
          error: Type.Integer({ minimum: 0 }),
          expectedFailures: Type.Integer({ minimum: 0 }),
          staleExpectedFailures: Type.Array(Type.String()),
        },
        { additionalProperties: false },
      ),
      ok: Type.Boolean({
        description:
          'True when no case that ran failed (other than as expected, or as advisory SHOULD), none errored, and no expected failure is stale. Cases the user disabled are not judged: a conformance claim needs none disabled.',
      }),
      cases: Type.Array(CaseResult),
    },
    { additionalProperties: false, description: 'The conformance kit\'s machine-readable report.' },
  ),
);
export type ConformanceReport = Static<typeof ConformanceReport>;
