/**
 * Defects that raise errors where no caller can catch them: an exception
 * thrown from a timer, a promise rejected with no handler, an `'error'`
 * event with no listener, and a throw after the case ended. Node would end
 * the process; the kit must fail the case whose work raised it and go on.
 */
import { AsyncResource } from 'node:async_hooks';
import { EventEmitter } from 'node:events';
import type { BrokenAdapter } from './adapter.js';
import type { Lab } from './lab.js';
import { wrapSandbox, wrapStdin } from './wrap.js';

/**
 * Faults queued by Processes of a lab's sandboxes, raised at the next
 * stream() call of any of its sandboxes: by then the case that queued them
 * has ended (the cases run one at a time), so the throw is late, and
 * deterministically so, without a timer racing the case's end.
 */
const queued = new WeakMap<Lab, Array<() => void>>();

export const faultAdapters: readonly BrokenAdapter[] = [
  {
    name: 'throws-from-timer',
    defect: 'the stdin writer\'s end() schedules a timer whose callback throws, an exception no caller can catch',
    needs: 'stdin',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        process: {
          stdin: (inner) =>
            wrapStdin(inner, {
              end() {
                setTimeout(() => {
                  throw new Error('the bookkeeping timer of end() failed');
                }, 0);
                return inner.end();
              },
            }),
        },
      }),
    caughtBy: { 'stdin.echo-and-eof': /uncaught exception: Error: the bookkeeping timer of end\(\) failed .*no caller could catch it/ },
    stillPasses: ['stream.synchronous'],
  },
  {
    name: 'unhandled-rejection',
    defect: 'kill() starts a promise that rejects with nobody handling it, besides signalling the command',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        process: {
          kill(inner, signal) {
            void Promise.reject(new Error(`the audit log of kill(${signal}) is unreachable`));
            return inner.kill(signal);
          },
        },
      }),
    caughtBy: { 'process.kill': /unhandled rejection: Error: the audit log of kill\(SIGUSR1\) is unreachable/ },
    stillPasses: ['stream.synchronous'],
  },
  {
    name: 'error-event-unheard',
    defect:
      'a write() to a command that stopped reading rejects with StdinClosed, and the adapter\'s connection also emits an \'error\' ' +
      'event that nothing listens to (a stdin EPIPE left on the pipe), which Node throws',
    needs: 'stdin',
    create: (lab) => {
      const connection = new EventEmitter();
      return wrapSandbox(lab.local(), {
        process: {
          stdin: (inner) =>
            wrapStdin(inner, {
              write: (data) =>
                inner.write(data).catch((error: unknown) => {
                  process.nextTick(() => connection.emit('error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' })));
                  throw error;
                }),
            }),
        },
      });
    },
    caughtBy: { 'stdin.stopped-reading': /uncaught exception: Error \[EPIPE\]: write EPIPE/ },
    alsoFails: ['stdin.write-after-exit'],
    stillPasses: ['stdin.echo-and-eof'],
  },
  {
    name: 'throws-late',
    defect: 'a Process, once disposed, leaves a callback that throws later, when the case that used it has ended',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        stream(inner, argv, options) {
          const pending = queued.get(lab) ?? [];
          queued.set(lab, []);
          // Run in their own case's context (bound when they were queued): the throw is that case's work.
          for (const raise of pending) raise();
          return inner.stream(argv, options);
        },
        process: {
          async dispose(inner) {
            await inner[Symbol.asyncDispose]();
            const raise = AsyncResource.bind(() =>
              setImmediate(() => {
                throw new Error('a disposed Process\'s callback ran after its case');
              }),
            );
            queued.set(lab, [...(queued.get(lab) ?? []), raise]);
          },
        },
      }),
    caughtBy: { 'stream.synchronous': /after the case ended, the adapter raised an uncaught exception: Error: a disposed Process's callback ran after its case/ },
    stillPasses: ['stream.tagged-chunks'],
  },
];
