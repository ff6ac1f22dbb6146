import type { Process } from '@sandstream/types';
import { check, checkErrorCode, thrownBy } from '../assert.js';
import { defineCase } from '../case.js';

/** stream() and its Process: SS-STREAM-*. */
export const streamCases = [
  defineCase({
    id: 'stream.synchronous',
    title: 'stream() returns its Process synchronously and the Process is not thenable',
    requirements: ['SS-STREAM-1'],
    needs: ['streaming'],
    async run(ctx) {
      const proc = ctx.sandbox.stream(['sleep', '5']);
      try {
        check(!(proc instanceof Promise), 'stream() returned a Promise');
        check(!('then' in proc), 'the Process has a `then` member, so `await` would unwrap it');
        check(typeof proc[Symbol.asyncIterator] === 'function', 'the Process is not async iterable');
        check(typeof proc[Symbol.asyncDispose] === 'function', 'the Process is not async disposable');
        check(typeof proc.wait === 'function' && typeof proc.kill === 'function', 'the Process lacks wait() or kill()');
        check(typeof proc.id === 'string' && proc.id !== '', 'the Process has no id');
      } finally {
        await proc[Symbol.asyncDispose]();
      }
    },
  }),
  defineCase({
    id: 'stream.tagged-chunks',
    title: 'a Process iterates OutputChunks tagged stdout or stderr, with Uint8Array data',
    requirements: ['SS-STREAM-2'],
    needs: ['streaming'],
    async run(ctx) {
      await using proc = ctx.sandbox.stream(['sh', '-c', 'printf out; printf err >&2']);
      const seen = { stdout: '', stderr: '' };
      for await (const chunk of proc) {
        check(chunk.stream === 'stdout' || chunk.stream === 'stderr', `a chunk has stream ${JSON.stringify(chunk.stream)}`);
        check(chunk.data instanceof Uint8Array, 'a chunk\'s data is not a Uint8Array');
        seen[chunk.stream] += Buffer.from(chunk.data).toString('latin1');
      }
      check(seen.stdout === 'out' && seen.stderr === 'err', `expected "out" on stdout and "err" on stderr, got ${JSON.stringify(seen)}`);
    },
  }),
  defineCase({
    id: 'stream.single-iteration',
    title: 'a Process can be iterated only once; a second iteration raises InvalidState',
    requirements: ['SS-STREAM-2'],
    needs: ['streaming'],
    async run(ctx) {
      await using proc = ctx.sandbox.stream(['echo', 'once']);
      const first = proc[Symbol.asyncIterator]();
      const error = thrownBy(() => proc[Symbol.asyncIterator](), 'a second [Symbol.asyncIterator]() call');
      checkErrorCode(error, 'INVALID_STATE', 'a second iteration');
      let text = '';
      for (let next = await first.next(); !next.done; next = await first.next()) {
        text += Buffer.from(next.value.data).toString();
      }
      check(text === 'once\n', `the first iterator lost output after a refused second iteration (got ${JSON.stringify(text)})`);
    },
  }),
];
