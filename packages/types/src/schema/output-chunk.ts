import { Type, type Static, type StaticDecode, type StaticEncode } from '@sinclair/typebox';
import { Base64Bytes } from './bytes.js';
import { definition } from './definition.js';

/** Which of the command's output pipes a chunk came from. */
export const StreamName = definition(
  'StreamName',
  "Which of the command's output pipes a chunk came from.",
  Type.Union([Type.Literal('stdout'), Type.Literal('stderr')]),
);
export type StreamName = Static<typeof StreamName>;

/**
 * One piece of a command's output, tagged with its stream. `data` holds the
 * bytes exactly as the command wrote them: no decoding, no line splitting.
 * Order is guaranteed within a stream, never between the two (SS-ORDER-1).
 *
 * @example
 * ```ts
 * import type { OutputChunk } from '@sandstream/types';
 * const chunk: OutputChunk = { stream: 'stdout', data: new TextEncoder().encode('hi\n') };
 * ```
 */
export const OutputChunk = definition(
  'OutputChunk',
  "One tagged piece of a command's output; data is base64 on the wire.",
  Type.Object(
    {
      stream: StreamName,
      data: Base64Bytes('The bytes the command wrote; base64 on the wire.'),
    },
    { additionalProperties: false },
  ),
);
/** An output chunk as TypeScript sees it: `data` is a `Uint8Array`. */
export type OutputChunk = StaticDecode<typeof OutputChunk>;
/** An output chunk in its JSON wire form: `data` is base64. */
export type OutputChunkJson = StaticEncode<typeof OutputChunk>;
