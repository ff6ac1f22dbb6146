/** Defects of standard input, and of results kept apart between Processes. */
import type { Process, StdinWriter } from '@sandstream/types';
import type { BrokenAdapter } from './adapter.js';
import { delegateDriver, wrapSandbox } from './wrap.js';

type ExecResultPromise = ReturnType<Process['wait']>;

export const stdinAndConcurrencyAdapters: readonly BrokenAdapter[] = [
  {
    name: 'stdin-writes-reordered',
    defect: 'the stdin writer holds each odd write back and sends it after the next one',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        process: {
          stdin(inner): StdinWriter {
            let held: Uint8Array | string | undefined;
            return {
              get closed() {
                return inner.closed;
              },
              write(data) {
                if (held === undefined && !inner.closed) {
                  held = data;
                  return Promise.resolve();
                }
                const previous = held;
                held = undefined;
                const writes = [inner.write(data)];
                if (previous !== undefined) writes.push(inner.write(previous));
                return Promise.all(writes).then(() => undefined);
              },
              async end() {
                const previous = held;
                held = undefined;
                if (previous !== undefined) await inner.write(previous);
                await inner.end();
              },
            };
          },
        },
      }),
    caughtBy: { 'stdin.echo-and-eof': /what cat echoed: got '1,0,3,2,/ },
    stillPasses: ['stdin.run-input', 'stdin.write-after-exit'],
  },
  {
    name: 'stdin-end-without-eof',
    slow: true,
    defect: 'closing standard input is a no-op in the driver: end() and one-shot input never deliver end-of-file',
    create: (lab) => lab.driver((driver) => delegateDriver(driver, { closeStdin: () => Promise.resolve() })),
    // Caught on evidence, not at the case's limit: everything written came back, end() resolved, and the command never ended.
    caughtBy: {
      'stdin.echo-and-eof': /^the command that echoes its input: it had not ended \d+ ms after every byte written came back and the input was ended, so it never saw end-of-file/,
      'stdin.run-input': /^run\(\) with input, of a command that echoes it: it had not ended \d+ ms after .* never saw end-of-file/,
      'stdin.exactly-once': /^cat, given 3000 records: it had not ended \d+ ms after .* never saw end-of-file/,
      'stdin.large-input': /^cat, given 6 MiB: it had not ended \d+ ms after .* never saw end-of-file/,
    },
    stillPasses: ['stdin.write-after-exit'],
  },
  {
    name: 'stdin-closed-swallowed',
    defect: 'a write after the command exited resolves instead of rejecting with StdinClosed',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        process: {
          stdin: (inner): StdinWriter => ({
            get closed() {
              return inner.closed;
            },
            write: (data) =>
              inner.write(data).catch((error: unknown) => {
                if ((error as { code?: unknown }).code !== 'STDIN_CLOSED') throw error;
              }),
            end: () => inner.end(),
          }),
        },
      }),
    caughtBy: { 'stdin.write-after-exit': /write\(\) after exit: expected a rejection, but it resolved/ },
    stillPasses: ['stdin.echo-and-eof'],
  },
  {
    name: 'results-cross-processes',
    defect: 'wait() resolves with the result the sandbox recorded last, which may be another Process\'s',
    create(lab) {
      let latest: Awaited<ExecResultPromise> | undefined;
      return wrapSandbox(lab.local(), {
        process: {
          async wait(inner) {
            const own = await inner.wait();
            const shown = latest ?? own;
            latest = own;
            return shown;
          },
        },
      });
    },
    caughtBy: { 'concurrency.separate': /process 1 reports exit 10, expected 11/ },
    stillPasses: ['wait.idempotent'],
  },
];
