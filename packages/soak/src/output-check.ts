/**
 * Checks what a consumer reads against what the command wrote: each chunk is
 * compared with the expected bytes at its offset (so an early ending still
 * proves that what arrived was an exact prefix), and each stream's content
 * is hashed as it arrives (sha-256), so a stream read to its end is compared
 * by checksum and length.
 */
import { createHash, type Hash } from 'node:crypto';
import type { OutputChunk, StreamName } from '@sandstream/types';

/**
 * How much of what follows a difference is kept: enough to tell a shell's
 * notices among the rest of a slow command's output, bounded per process.
 */
const AFTER_CAP = 64 * 1024;
/** The lines a shell writes when a child of it dies by a signal. */
const NOTICES = ['Terminated\n', 'Killed\n', 'Hangup\n'].map((line) => Buffer.from(line, 'latin1'));

interface StreamState {
  readonly expected: Uint8Array;
  readonly hash: Hash;
  offset: number;
  /** The first difference, once seen: comparisons stop there. */
  mismatch: string | undefined;
  /** Where the first difference is. */
  mismatchAt: number;
  /** The last (up to) three bytes received. */
  tail: number[];
  /** What arrived from the first difference on (up to {@link AFTER_CAP} bytes). */
  after: number[];
}

/** The output check of one command. */
export class OutputCheck {
  private readonly streams: Record<StreamName, StreamState>;

  /**
   * `textOnly`: the adapter delivers decoded text (no `binary-output`), so a
   * command ended in the middle of a multi-byte character shows that
   * character's bytes as one U+FFFD at the very end of its stream (the
   * decoder's flush; ADR-0027). Only that is not a difference.
   */
  constructor(
    expected: { readonly stdout: Uint8Array; readonly stderr: Uint8Array },
    private readonly textOnly = false,
  ) {
    const state = (bytes: Uint8Array): StreamState => ({
      expected: bytes,
      hash: createHash('sha256'),
      offset: 0,
      mismatch: undefined,
      mismatchAt: -1,
      tail: [],
      after: [],
    });
    this.streams = { stdout: state(expected.stdout), stderr: state(expected.stderr) };
  }

  /** Compares one chunk with the expected bytes at its stream's offset. */
  accept(chunk: Pick<OutputChunk, 'stream' | 'data'>): void {
    this.acceptBytes(chunk.stream, chunk.data);
  }

  /** Compares bytes of one stream with the expected bytes at its offset. */
  acceptBytes(stream: StreamName, data: Uint8Array): void {
    const state = this.streams[stream];
    state.hash.update(data);
    if (state.mismatch !== undefined) keepAfter(state, data, 0);
    if (state.mismatch === undefined && !this.matches(state, data)) {
      const { expected, offset } = state;
      for (let i = 0; i < data.byteLength; i++) {
        if (offset + i >= expected.byteLength) {
          state.mismatch = `${stream}: ${data.byteLength - i} byte(s) more than the ${expected.byteLength} written, from offset ${offset + i}: ${snippet(data, i)}`;
          state.mismatchAt = offset + i;
          keepAfter(state, data, i);
          break;
        }
        if (data[i] !== expected[offset + i]) {
          state.mismatch = `${stream}: byte ${offset + i} is 0x${hex(data[i]!)}, the command wrote 0x${hex(expected[offset + i]!)}; received from there: ${snippet(data, i)}`;
          state.mismatchAt = offset + i;
          keepAfter(state, data, i);
          break;
        }
      }
    }
    state.offset += data.byteLength;
    const last = data.subarray(Math.max(0, data.byteLength - 3));
    state.tail = [...state.tail, ...last].slice(-3);
  }

  /** The fast path: the chunk equals the expected bytes at its offset (memcmp). */
  private matches(state: StreamState, data: Uint8Array): boolean {
    const end = state.offset + data.byteLength;
    if (end > state.expected.byteLength) return false;
    const want = state.expected.subarray(state.offset, end);
    return Buffer.from(data.buffer, data.byteOffset, data.byteLength).equals(want);
  }

  /** True once every expected byte of both streams has arrived. */
  complete(): boolean {
    return this.streams.stdout.offset >= this.streams.stdout.expected.byteLength && this.streams.stderr.offset >= this.streams.stderr.expected.byteLength;
  }

  /** Bytes received so far on one stream. */
  receivedOn(stream: StreamName): number {
    return this.streams[stream].offset;
  }

  /** Bytes received so far, both streams. */
  received(): number {
    return this.streams.stdout.offset + this.streams.stderr.offset;
  }

  /** The first difference in what arrived so far (an exact prefix is none). */
  prefixProblem(): string | undefined {
    for (const name of ['stdout', 'stderr'] as const) {
      const state = this.streams[name];
      if (state.mismatch !== undefined && !this.replacedTail(state) && !(name === 'stderr' && this.shellNotice(state))) return state.mismatch;
    }
    return undefined;
  }

  /**
   * What arrived from the first difference on is the rest of the command's
   * output with the shell's own notices that a child died by a signal
   * ("Terminated", "Killed") among it: written by the command's shell while
   * it is being ended, when a backend signals the processes of a tree one by
   * one, so a child goes first and the shell may still write after it.
   */
  private shellNotice(state: StreamState): boolean {
    if (state.offset - state.mismatchAt !== state.after.length) return false;
    const received = Buffer.from(state.after);
    const { expected } = state;
    let at = 0;
    let want = state.mismatchAt;
    let notices = 0;
    while (at < received.length) {
      const notice = NOTICES.find((line) => received.subarray(at, at + line.length).equals(line));
      if (notice !== undefined && (want >= expected.length || received[at] !== expected[want] || !matchesAt(received, at, expected, want, notice.length))) {
        at += notice.length;
        notices++;
        continue;
      }
      if (want >= expected.length || received[at] !== expected[want]) return false;
      at++;
      want++;
    }
    return notices > 0;
  }

  /** The only difference is a U+FFFD as the last three bytes, where the command wrote the start of a multi-byte character. */
  private replacedTail(state: StreamState): boolean {
    const [a, b, c] = state.tail;
    const lead = state.expected[state.mismatchAt];
    return (
      this.textOnly &&
      state.mismatchAt === state.offset - 3 &&
      a === 0xef &&
      b === 0xbf &&
      c === 0xbd &&
      lead !== undefined &&
      lead >= 0xc2
    );
  }

  /**
   * Whether standard error, from its first difference on, holds a shell's
   * notice that it could not fork (dash: "sh: 3: Cannot fork"; bash:
   * "fork: Resource temporarily unavailable"): the command itself was
   * refused a process by the host's limit and said so.
   */
  forkRefused(): boolean {
    const state = this.streams.stderr;
    if (state.mismatch === undefined) return false;
    const text = Buffer.from(state.after).toString('latin1');
    return /Cannot fork|fork: (retry: )?Resource temporarily unavailable/.test(text);
  }

  /** The first difference in what arrived so far on standard output (an exact prefix is none). */
  stdoutPrefixProblem(): string | undefined {
    const state = this.streams.stdout;
    return state.mismatch !== undefined && !this.replacedTail(state) ? state.mismatch : undefined;
  }

  /**
   * For a stream read to its end: the problems with its content, by checksum
   * and length (empty when byte-exact).
   */
  completeProblems(): string[] {
    const problems: string[] = [];
    for (const name of ['stdout', 'stderr'] as const) {
      const state = this.streams[name];
      const got = state.hash.digest('hex');
      const want = createHash('sha256').update(state.expected).digest('hex');
      if (got === want && state.offset === state.expected.byteLength) continue;
      problems.push(
        `${name}: sha256 ${got.slice(0, 12)} over ${state.offset} bytes, the command wrote sha256 ${want.slice(0, 12)} over ${state.expected.byteLength} bytes` +
          (state.mismatch === undefined ? '' : ` (${state.mismatch})`),
      );
    }
    return problems;
  }
}

/** Up to 120 bytes from `at`, as a JSON string of their Latin-1 reading. */
function snippet(data: Uint8Array, at: number): string {
  return JSON.stringify(Buffer.from(data.subarray(at, at + 120)).toString('latin1'));
}

function hex(byte: number): string {
  return byte.toString(16).padStart(2, '0');
}

/** True when `length` bytes of `received` from `at` equal `expected` from `want`. */
function matchesAt(received: Buffer, at: number, expected: Uint8Array, want: number, length: number): boolean {
  if (want + length > expected.length) return false;
  return received.subarray(at, at + length).equals(expected.subarray(want, want + length));
}

/** Keeps what follows a difference, up to {@link AFTER_CAP} bytes (a loop: a spread of 64 Ki arguments can overflow the stack). */
function keepAfter(state: StreamState, data: Uint8Array, from: number): void {
  const end = Math.min(data.byteLength, from + AFTER_CAP - state.after.length);
  for (let i = from; i < end; i++) state.after.push(data[i]!);
}
