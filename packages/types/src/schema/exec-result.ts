import { Type, type StaticDecode, type StaticEncode } from '@sinclair/typebox';
import { Base64Bytes } from './bytes.js';
import { definition } from './definition.js';

const SIGNAL_NAME = '^SIG[A-Z0-9]+$';

/**
 * The terminal outcome of a command. See ADR-0005 for why output is bytes.
 *
 * Invariants the schema itself enforces:
 * - `streamed: true` means `stdout` and `stderr` are empty by construction
 *   (the caller already took delivery of the bytes through iteration) and
 *   both truncation flags are `false` (nothing was capped).
 * - A command killed by a signal has `exitCode: null` and `signal` set.
 */
export const ExecResult = definition(
  'ExecResult',
  'The terminal outcome of a command. A streamed result has empty output and no truncation; a result ended by a signal has a null exitCode.',
  Type.Object(
    {
      exitCode: Type.Union([Type.Integer({ minimum: 0, maximum: 255 }), Type.Null()], {
        description:
          'The exit status the command reported, or null when it was killed by a signal or never reported one.',
      }),
      signal: Type.Union([Type.String({ pattern: SIGNAL_NAME }), Type.Null()], {
        description: 'The name of the signal that ended the command (e.g. "SIGKILL"), or null.',
      }),
      stdout: Base64Bytes('Captured standard output, byte-exact. Empty when streamed.'),
      stderr: Base64Bytes('Captured standard error, byte-exact. Empty when streamed.'),
      streamed: Type.Boolean({
        description: 'True when the output was delivered through stream(); stdout and stderr are then empty.',
      }),
      timedOut: Type.Boolean({ description: 'True when the wall-clock timeout ended the command.' }),
      stdoutTruncated: Type.Boolean({
        description: 'True when stdout exceeded maxOutputBytes and was cut at the cap.',
      }),
      stderrTruncated: Type.Boolean({
        description: 'True when stderr exceeded maxOutputBytes and was cut at the cap.',
      }),
      durationMs: Type.Number({
        minimum: 0,
        description: 'Wall-clock milliseconds from the start request to the reported exit.',
      }),
    },
    {
      additionalProperties: false,
      allOf: [
        {
          if: { type: 'object', properties: { streamed: { const: true } }, required: ['streamed'] },
          then: {
            type: 'object',
            properties: {
              stdout: { type: 'string', maxLength: 0 },
              stderr: { type: 'string', maxLength: 0 },
              stdoutTruncated: { const: false },
              stderrTruncated: { const: false },
            },
          },
        },
        {
          if: { type: 'object', properties: { signal: { type: 'string' } }, required: ['signal'] },
          then: { type: 'object', properties: { exitCode: { type: 'null' } } },
        },
      ],
    },
  ),
);
/** The data fields of an {@link ExecResult}, with output as `Uint8Array`. */
export type ExecResultData = StaticDecode<typeof ExecResult>;
/** An ExecResult in its JSON wire form: output is base64. */
export type ExecResultJson = StaticEncode<typeof ExecResult>;

/**
 * The terminal outcome of a command: the schema's data plus lazily decoded
 * text views. `stdoutText`/`stderrText` are UTF-8 decodings (invalid
 * sequences become U+FFFD); `stdout`/`stderr` stay byte-exact.
 *
 * @example
 * ```ts
 * import type { ExecResult } from '@sandstream/types';
 * function report(result: ExecResult): string {
 *   return result.exitCode === 0 ? result.stdoutText : `failed: ${result.stderrText}`;
 * }
 * ```
 */
export interface ExecResult extends ExecResultData {
  /** `stdout` decoded as UTF-8, computed on first access. */
  readonly stdoutText: string;
  /** `stderr` decoded as UTF-8, computed on first access. */
  readonly stderrText: string;
}
