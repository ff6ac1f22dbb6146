/** Defects of output delivery, wait() and results. */
import { InvalidState, type ExecResult, type OutputChunk, type Process, type RunOptions, type StreamName } from '@sandstream/types';
import type { Sandbox } from '@sandstream/types';
import type { BrokenAdapter } from './adapter.js';
import { alterResult, delay, mapDriverEvents, omit, transformChunks, wrapSandbox, type ChunkIterator } from './wrap.js';

const encoder = new TextEncoder();
/** How often wait() was called, per result of the runtime. */
const counts = new WeakMap<ExecResult, number>();

/** Decodes as UTF-8 and encodes again: invalid sequences become U+FFFD. */
function throughText(data: Uint8Array): Uint8Array {
  return encoder.encode(new TextDecoder().decode(data));
}

/** `data` up to and including its last newline. */
function wholeLines(data: Uint8Array): Uint8Array {
  return data.subarray(0, data.lastIndexOf(0x0a) + 1);
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a, 0);
  out.set(b, a.byteLength);
  return out;
}

export const outputAdapters: readonly BrokenAdapter[] = [
  {
    name: 'reorders-chunks',
    defect: 'iteration holds each chunk back until the next chunk of the same stream, then delivers the two swapped',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        process: {
          iterator(inner): ChunkIterator {
            const source = inner[Symbol.asyncIterator]();
            return (async function* (): AsyncGenerator<OutputChunk, undefined, undefined> {
              const held = new Map<StreamName, OutputChunk>();
              let pending: Promise<IteratorResult<OutputChunk, undefined>> | undefined;
              try {
                for (;;) {
                  pending ??= source.next();
                  // A held chunk is not kept back for long: after 5 ms of
                  // silence it goes out as it is, so output is never stuck.
                  const next = held.size === 0 ? await pending : await Promise.race([pending, delay(5).then(() => undefined)]);
                  if (next === undefined) {
                    yield* held.values();
                    held.clear();
                    continue;
                  }
                  pending = undefined;
                  if (next.done) break;
                  const previous = held.get(next.value.stream);
                  if (previous === undefined) {
                    held.set(next.value.stream, next.value);
                    continue;
                  }
                  held.delete(next.value.stream);
                  yield next.value;
                  yield previous;
                }
                yield* held.values();
                return undefined;
              } finally {
                await source.return?.();
              }
            })();
          },
        },
      }),
    caughtBy: { 'ordering.within-stream': /streamed stdout: line [0-9]+ is .* out of order/ },
    stillPasses: ['stream.tagged-chunks', 'bytes.final-line', 'teardown.break'],
  },
  {
    name: 'drops-a-chunk',
    defect: 'iteration loses the third stdout chunk',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        process: {
          iterator: (inner) =>
            transformChunks(inner, async function* (source) {
              let seen = 0;
              for await (const chunk of source) {
                if (chunk.stream === 'stdout' && ++seen === 3) continue;
                yield chunk;
              }
              return undefined;
            }),
        },
      }),
    caughtBy: { 'ordering.within-stream': /streamed stdout/ },
    stillPasses: ['stream.tagged-chunks', 'bytes.final-line'],
  },
  {
    name: 'mislabels-stderr',
    defect: 'every second stderr chunk is tagged stdout',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        process: {
          iterator: (inner) =>
            transformChunks(inner, async function* (source) {
              let errors = 0;
              for await (const chunk of source) {
                yield chunk.stream === 'stderr' && errors++ % 2 === 1 ? { stream: 'stdout', data: chunk.data } : chunk;
              }
              return undefined;
            }),
        },
      }),
    caughtBy: { 'ordering.tagging': /a stdout chunk contains bytes of the other stream/ },
    // The relabelled stderr lines land in the stdout sequence.
    alsoFails: ['ordering.within-stream'],
    stillPasses: ['stream.tagged-chunks', 'bytes.final-line'],
  },
  {
    name: 'decodes-output',
    defect: 'output is decoded as UTF-8 and encoded again, chunk by chunk and in results, so invalid bytes become U+FFFD',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        async run(inner, argv, options) {
          const result = await inner.run(argv, options);
          return alterResult(result, { stdout: throughText(result.stdout), stderr: throughText(result.stderr) });
        },
        process: {
          iterator: (inner) =>
            transformChunks(inner, async function* (source) {
              for await (const chunk of source) yield { stream: chunk.stream, data: throughText(chunk.data) };
              return undefined;
            }),
        },
      }),
    caughtBy: { 'bytes.all-values': /run\(\) stdout: bytes differ at offset 128/ },
    alsoFails: ['bytes.utf8-split'],
    stillPasses: ['bytes.final-line', 'ordering.tagging'],
  },
  {
    name: 'drops-final-partial-line',
    defect: 'output is framed by lines and a last line without a newline is never delivered',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        async run(inner, argv, options) {
          const result = await inner.run(argv, options);
          return alterResult(result, { stdout: wholeLines(result.stdout), stderr: wholeLines(result.stderr) });
        },
        process: {
          iterator: (inner) =>
            transformChunks(inner, async function* (source) {
              const held = { stdout: new Uint8Array(0), stderr: new Uint8Array(0) };
              for await (const chunk of source) {
                const data = concat(held[chunk.stream], chunk.data);
                const lines = wholeLines(data);
                held[chunk.stream] = data.slice(lines.byteLength);
                if (lines.byteLength > 0) yield { stream: chunk.stream, data: lines };
              }
              // What is left in `held` has no newline and is dropped.
              return undefined;
            }),
        },
      }),
    caughtBy: { 'bytes.final-line': /run\(\) stdout: got 'first\\n', expected 'first\\nno newline'/ },
    // A case reading a file through a helper fails for the output lost, rather than taking the file for absent.
    alsoFails: ['teardown.break'],
    stillPasses: ['bytes.utf8-split', 'result.exit-codes'],
  },
  {
    name: 'result-off-schema',
    defect: 'run() reports a negative durationMs (its clock starts after the command\'s)',
    create: (lab) => wrapSandbox(lab.local(), { run: async (inner, argv, options) => alterResult(await inner.run(argv, options), { durationMs: -1 }) }),
    caughtBy: { 'result.schema': /a result could not be encoded: The encoded value does not match the expected schema/ },
    stillPasses: ['result.exit-codes'],
  },
  {
    name: 'drops-final-chunk',
    defect: 'iteration delivers each chunk only once the next one has arrived, and loses the last one when the output ends',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        process: {
          iterator: (inner) =>
            transformChunks(inner, async function* (source) {
              let previous: OutputChunk | undefined;
              for await (const chunk of source) {
                if (previous !== undefined) yield previous;
                previous = chunk;
              }
              return undefined;
            }),
        },
      }),
    caughtBy: { 'bytes.final-line': /streamed (stdout|stderr): got/ },
    stillPasses: ['result.exit-codes'],
  },
  {
    name: 'wait-rejects-second-call',
    defect: 'wait() can be called only once; a second call rejects with InvalidState',
    create(lab) {
      const waited = new WeakSet<Process>();
      return wrapSandbox(lab.local(), {
        process: {
          wait(inner) {
            if (waited.has(inner)) return Promise.reject(new InvalidState('wait() was already called'));
            waited.add(inner);
            return inner.wait();
          },
        },
      });
    },
    caughtBy: { 'wait.idempotent': /InvalidState \[INVALID_STATE\]: wait\(\) was already called/ },
    stillPasses: ['result.streamed-flag', 'wait.drains-unread'],
  },
  {
    name: 'wait-result-changes',
    defect: 'every later wait() recomputes durationMs, so calls resolve with different results',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        process: {
          async wait(inner) {
            const first = await inner.wait();
            // The runtime hands out one result object; anything after the first call is "recomputed".
            const calls = (counts.get(first) ?? 0) + 1;
            counts.set(first, calls);
            return calls === 1 ? first : alterResult(first, { durationMs: first.durationMs + calls });
          },
        },
      }),
    caughtBy: { 'wait.idempotent': /a second wait\(\): got .*durationMs/ },
    stillPasses: ['result.streamed-flag'],
  },
  {
    name: 'wait-does-not-drain',
    defect: 'wait() waits for the command to exit before discarding unread output, so a command blocked on a full pipe never exits',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        process: {
          wait: (inner) =>
            new Promise<ExecResult>((resolve, reject) => {
              const timer = setInterval(() => {
                if (!inner.exited) return;
                clearInterval(timer);
                inner.wait().then(resolve, reject);
              }, 10);
              timer.unref();
            }),
        },
      }),
    // The case watches the command's progress while wait() is pending: it stands still on a full pipe.
    caughtBy: { 'wait.drains-unread': /wait\(\) did not drain the unread output: while it was pending, the command stood still for \d+ ms with \d+ of its 40 MiB written/ },
    stillPasses: ['wait.idempotent', 'result.streamed-flag'],
  },
  {
    name: 'streamed-flag-wrong',
    defect: 'wait() of a streamed command resolves with streamed: false',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        process: { wait: async (inner) => alterResult(await inner.wait(), { streamed: false }) },
      }),
    caughtBy: { 'result.streamed-flag': /a stream\(\) result has streamed: false/ },
    alsoFails: ['wait.idempotent'],
    stillPasses: ['stream.tagged-chunks', 'result.schema'],
  },
  {
    name: 'signal-death-as-exit-0',
    defect: 'a command ended by a signal is reported as exit code 0 with no signal',
    create: (lab) =>
      lab.driver((driver) =>
        mapDriverEvents(driver, (events) => ({
          output: (stream, data) => events.output(stream, data),
          fail: (error) => events.fail(error),
          leaderExited: (status) => events.leaderExited(status),
          exit: (status) => events.exit(status.signal === null ? status : { exitCode: 0, signal: null }),
        })),
      ),
    caughtBy: { 'result.exit-codes': /death by SIGKILL reported as 0\/null/ },
    alsoFails: ['teardown.close', 'teardown.sigkill-after-grace', 'teardown.timeout-run'],
    stillPasses: ['teardown.dispose', 'teardown.sigterm-first'],
  },
  {
    name: 'truncation-not-flagged',
    defect: 'run() cuts output at maxOutputBytes but never sets the truncation flags',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        run: async (inner, argv, options) =>
          alterResult(await inner.run(argv, options), { stdoutTruncated: false, stderrTruncated: false }),
      }),
    caughtBy: { 'output-cap.truncation': /stdoutTruncated is false although stdout exceeded the cap/ },
    alsoFails: ['output-cap.on-output-live'],
    stillPasses: ['bytes.all-values'],
  },
  {
    name: 'cap-ignored',
    defect: 'run() ignores maxOutputBytes and keeps everything',
    create: (lab) => wrapSandbox(lab.local(), { run: (inner, argv, options) => inner.run(argv, omit(options, 'maxOutputBytes')) }),
    caughtBy: { 'output-cap.truncation': /stdout kept 108894 bytes under a 1000-byte cap/ },
    alsoFails: ['output-cap.on-output-live'],
    stillPasses: ['bytes.all-values'],
  },
  {
    name: 'on-output-reordered',
    defect: 'run() holds each onOutput chunk back until the next chunk of the same stream (or 5 ms of silence) and then calls back with the two swapped',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        run(inner, argv, options) {
          const onOutput = options?.onOutput;
          if (typeof onOutput !== 'function') return inner.run(argv, options);
          const held = new Map<StreamName, OutputChunk>();
          let timer: NodeJS.Timeout | undefined;
          const flush = (): void => {
            clearTimeout(timer);
            const chunks = [...held.values()];
            held.clear();
            for (const chunk of chunks) onOutput(chunk);
          };
          const swapping: RunOptions = {
            ...options,
            onOutput(chunk) {
              clearTimeout(timer);
              const copy = { stream: chunk.stream, data: Uint8Array.from(chunk.data) };
              const previous = held.get(chunk.stream);
              if (previous === undefined) {
                held.set(chunk.stream, copy);
              } else {
                held.delete(chunk.stream);
                onOutput(copy);
                onOutput(previous);
              }
              timer = setTimeout(flush, 5);
            },
          };
          return inner.run(argv, swapping).finally(flush);
        },
      }),
    caughtBy: { 'ordering.within-stream': /as onOutput received it: line/ },
  },
  {
    name: 'on-output-after-exit',
    slow: true,
    defect: 'run() buffers the chunks and calls onOutput only once the command has exited',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        async run(inner, argv, options) {
          const onOutput = options?.onOutput;
          if (typeof onOutput !== 'function') return inner.run(argv, options);
          const chunks: OutputChunk[] = [];
          const buffered: RunOptions = {
            ...options,
            onOutput: (chunk) => chunks.push({ stream: chunk.stream, data: Uint8Array.from(chunk.data) }),
          };
          const result = await inner.run(argv, buffered);
          for (const chunk of chunks) onOutput(chunk);
          return result;
        },
      }),
    // The command waits for a file the first callback creates, so run() ends
    // only by its own 15 s timeout; the case then reports the late callback.
    // (Cut short by a lower caseTimeoutMs, the case's fire-and-forget helper
    // call in the late callback would reject unhandled on the closed sandbox.)
    caughtBy: { 'output-cap.on-output-live': /onOutput was not called while the command ran/ },
    stillPasses: ['output-cap.truncation'],
    caseTimeoutMs: 20_000,
  },
];
