// A Sandstream Process seen as the AI SDK's SandboxProcess: one iteration of
// its tagged chunks split into two byte streams, its stdin writer as a
// WritableStream.
import type { Process, StreamName } from '@sandstream/types';

/** Bytes queued per stream before a stream that is being read holds the pump back. */
export const STREAM_HIGH_WATER_BYTES = 1024 * 1024;

interface Side {
  readonly stream: ReadableStream<Uint8Array>;
  controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  /** Resolves the pump's wait when the reader asks for more. */
  pulled: (() => void) | undefined;
  cancelled: boolean;
}

function side(): Side {
  const state: { -readonly [K in keyof Side]: Side[K] } = {
    stream: undefined as unknown as ReadableStream<Uint8Array>,
    controller: undefined,
    pulled: undefined,
    cancelled: false,
  };
  state.stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        state.controller = controller;
      },
      pull() {
        state.pulled?.();
        state.pulled = undefined;
      },
      cancel() {
        // A reader that gave up: the rest of this stream is discarded, the other still flows.
        state.cancelled = true;
        state.pulled?.();
        state.pulled = undefined;
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: STREAM_HIGH_WATER_BYTES }),
  );
  return state;
}

/**
 * Starts reading `proc` and hands its chunks to two ReadableStreams. A
 * stream that has a reader and is full holds the pump back, so a slow reader
 * slows the command instead of filling memory. A stream nobody has taken a
 * reader of yet is only queued: the AI SDK's callers often read one stream
 * only, and holding the pump for the other would stall the command.
 */
export function splitOutput(proc: Process): { stdout: ReadableStream<Uint8Array>; stderr: ReadableStream<Uint8Array> } {
  const sides: Record<StreamName, Side> = { stdout: side(), stderr: side() };
  void (async () => {
    try {
      for await (const chunk of proc) {
        const target = sides[chunk.stream];
        if (target.cancelled) continue;
        target.controller!.enqueue(chunk.data);
        if ((target.controller!.desiredSize ?? 1) <= 0 && target.stream.locked) {
          await new Promise<void>((resolve) => (target.pulled = resolve));
        }
      }
      for (const s of Object.values(sides)) if (!s.cancelled) s.controller!.close();
    } catch (error) {
      // The command's end is reported by wait(); the streams end with the same error.
      for (const s of Object.values(sides)) if (!s.cancelled) s.controller!.error(error);
    }
  })();
  return { stdout: sides.stdout.stream, stderr: sides.stderr.stream };
}

/** The Process's stdin writer as a WritableStream: closing it is end-of-file, the command runs on. */
export function stdinStream(proc: Process): WritableStream<Uint8Array> {
  const writer = proc.stdin!;
  return new WritableStream<Uint8Array>({
    write: (chunk) => writer.write(chunk),
    close: () => writer.end(),
    abort: () => writer.end(),
  });
}

/** Reads a byte stream to its end. */
export async function collect(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const part of stream as unknown as AsyncIterable<Uint8Array>) parts.push(part);
  return Buffer.concat(parts);
}
