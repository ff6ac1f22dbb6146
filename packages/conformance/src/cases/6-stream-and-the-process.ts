import { check } from '../assert.js';
import { defineCase } from '../case.js';

/** stream() and its Process: SS-STREAM-1. */
export const streamCases = [
  defineCase({
    id: 'stream.synchronous',
    title: '"stream() MUST return its Process synchronously, and the Process MUST NOT be thenable": no Promise and no then member, but an async iterable and disposable Process with wait() and kill()',
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
];
