import { Type } from '@sinclair/typebox';

// Canonical, padded RFC 4648 base64 (section 4, with the pad bits of the last
// group zero, so every byte string has exactly one encoding). The empty
// string encodes zero bytes.
//
// The four characters of a quantum are written out rather than as
// `[A-Za-z0-9+/]{4}`: V8's backtracking engine (used by ajv,
// @hyperjump/json-schema and @cfworker/json-schema alike) handles a starred
// group of fixed-length, single-character items in constant stack, while the
// counted form overflows its stack past about 3 MiB of output.
// packages/types/test/large-results.test.ts holds every validator to 64 MiB.
const B64 = '[A-Za-z0-9+/]';
export const BASE64_PATTERN =
  `^(?:${B64}${B64}${B64}${B64})*(?:${B64}[AQgw]==|${B64}${B64}[AEIMQUYcgkosw048]=)?$`;

/** Decodes canonical base64 into bytes. The caller validates the alphabet first. */
export function base64ToBytes(text: string): Uint8Array {
  const buffer = Buffer.from(text, 'base64');
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}

/** Encodes bytes as canonical, padded base64. */
export function bytesToBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/**
 * Bytes on the wire: a base64 string in JSON, a `Uint8Array` in TypeScript.
 * The transform is what lets one TypeBox definition produce both the JSON
 * Schema (the encoded side) and the static type (the decoded side).
 */
export function Base64Bytes(description: string) {
  return Type.Transform(
    Type.String({
      contentEncoding: 'base64',
      contentMediaType: 'application/octet-stream',
      pattern: BASE64_PATTERN,
      description,
    }),
  )
    .Decode((text) => base64ToBytes(text))
    .Encode((bytes: Uint8Array) => bytesToBase64(bytes));
}
