import { Type, type TSchema } from '@sinclair/typebox';

// Canonical, padded RFC 4648 base64 (section 3.5: the pad bits of the last
// group are zero, so every byte string has exactly one encoding). An empty
// string encodes zero bytes.
const BASE64_PATTERN =
  '^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?$';

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

/**
 * Names a schema as a definition of the spec document. Only `title` is set:
 * nested definitions are inlined, so a `$id` here would collide in ajv.
 */
export function definition<T extends TSchema>(name: string, schema: T): T {
  return Object.assign(schema, { title: name });
}
