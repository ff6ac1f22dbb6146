/**
 * Data the cases send into a sandbox (one-shot input, environment values,
 * argv elements) at sizes that cross the places where an adapter cuts data
 * up: a pipe buffer (64 KiB on Linux) and a remote service's request (the
 * remote adapters split standard input into requests of 512 KiB to 1 MiB).
 * An adapter that handles only what fits one of them loses the rest.
 *
 * The sizes stay within what every POSIX host passes to a program: each
 * argv or environment string below Linux's 128 KiB limit for one string,
 * and all of them together far below its 2 MiB for the whole exec (macOS:
 * 1 MiB). Section 3 of the spec sets no limit of its own and no error for
 * oversize data, so the kit checks only sizes a host accepts.
 */
import { randomBytes } from 'node:crypto';
import { hasCapability, type Sandbox } from '@sandstream/types';
import { ConformanceFailure } from '../../assert.js';

/** A pipe's buffer on Linux: data above it cannot be written in one go to a command that is not reading. */
export const PIPE_BUFFER_BYTES = 64 * 1024;

/** One-shot input: twenty pipe buffers and a byte, more than one request of either remote adapter. */
export const INPUT_BYTES = 20 * PIPE_BUFFER_BYTES + 1;

/** One large argv element or environment value: more than a pipe buffer, less than Linux's 128 KiB per string. */
export const LARGE_STRING_BYTES = 100_000;

/** How many small argv elements or environment variables (about 40 KB in all). */
export const MANY_COUNT = 500;

// Printable ASCII and UTF-8 of two, three and four bytes; no control
// characters, no surrogates, so every string is valid UTF-8 without NUL.
const RANGES: ReadonlyArray<readonly [number, number]> = [[0x20, 0x7e], [0xa0, 0x7ff], [0x800, 0xd7ff], [0x10000, 0x10ffff]];

/** The UTF-8 length of a code point that is not a surrogate. */
function utf8Length(codePoint: number): number {
  return codePoint < 0x80 ? 1 : codePoint < 0x800 ? 2 : codePoint < 0x10000 ? 3 : 4;
}

/**
 * A random string of exactly `bytes` bytes of UTF-8, characters of one to
 * four bytes, none of them NUL or a control character: valid as an argv
 * element and as an environment value, and shown exactly by text output.
 */
export function randomText(bytes: number): string {
  // Four random bytes a character: one picks the range, three the character in it.
  const random = randomBytes(bytes * 4);
  const codePoints: number[] = [];
  let length = 0;
  for (let i = 0; length < bytes; i += 4) {
    const [low, high] = RANGES[random[i]! % RANGES.length]!;
    let codePoint = low + (random.readUIntBE(i + 1, 3) % (high - low + 1));
    // The last character is ASCII when a longer one would not fit.
    if (length + utf8Length(codePoint) > bytes) codePoint = 0x78;
    codePoints.push(codePoint);
    length += utf8Length(codePoint);
  }
  const parts: string[] = [];
  for (let i = 0; i < codePoints.length; i += 4096) parts.push(String.fromCodePoint(...codePoints.slice(i, i + 4096)));
  return parts.join('');
}

/**
 * `size` bytes for an echo through the command: random bytes where output
 * is byte-exact; where it is text only (no `binary-output`, SS-TEXT-1),
 * {@link randomText}, so the echo still shows every byte of the input.
 */
export function echoable(sandbox: Sandbox, size: number): Uint8Array {
  if (hasCapability(sandbox.capabilities, 'binary-output')) return new Uint8Array(randomBytes(size));
  return new Uint8Array(Buffer.from(randomText(size), 'utf8'));
}

/** `count` random strings of 0 to 63 characters (of every length in turn, so some are empty), cut from one random text. */
export function manyTexts(count: number): string[] {
  const characters = Array.from(randomText(count * 32 * 4));
  const strings: string[] = [];
  for (let i = 0, at = 0; i < count; at += i % 64, i++) strings.push(characters.slice(at, at + (i % 64)).join(''));
  return strings;
}

/**
 * Checks that `got`, what a command printed as `printf '%s\000'` of each
 * string, holds exactly `expected`; the failure names the first string
 * that did not arrive whole (`name(i)` says what string `i` is) and how
 * many arrived.
 */
export function checkStrings(got: Uint8Array, expected: readonly string[], name: (index: number) => string, what: string): void {
  const wanted = Buffer.from(expected.map((s) => `${s}\0`).join(''), 'utf8');
  if (Buffer.compare(got, wanted) === 0) return;
  const parts = Buffer.from(got).toString('utf8').split('\0');
  if (parts.at(-1) === '') parts.pop();
  const index = expected.findIndex((s, i) => parts[i] !== s);
  const part = index === -1 ? undefined : parts[index];
  const size = (s: string): number => Buffer.byteLength(s);
  const detail =
    index === -1
      ? `${parts.length - expected.length} more than were given`
      : part === undefined
        ? `${name(index)} and every one after it are missing`
        : `${name(index)} arrived as ${size(part)} bytes, expected ${size(expected[index]!)}${expected[index]!.startsWith(part) ? ' (cut short)' : ''}`;
  throw new ConformanceFailure(
    `${what}: ${parts.length} strings arrived of the ${expected.length} given (${got.byteLength} of ${wanted.byteLength} bytes): ${detail}`,
  );
}
