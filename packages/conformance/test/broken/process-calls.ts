/** Defects of stream() and the Process's own calls: thenable, kill(), a second iteration, a lazy start, a failed spawn. */
import {
  InvalidArgument,
  SIGNALS,
  planStream,
  type Process,
  type Signal,
  type StdinWriter,
} from '@sandstream/types';
import type { BrokenAdapter } from './adapter.js';

import { delegateDriver, WrappedProcess, wrapSandbox, type ChunkIterator } from './wrap.js';

type ExecResultPromise = ReturnType<Process['wait']>;

/** A Process that starts its command on first use instead of at the stream() call. */
class LazyProcess implements Process {
  static #count = 0;
  readonly id = `lazy:${++LazyProcess.#count}`;
  readonly #start: () => Process;
  #inner: Process | undefined;
  constructor(
    readonly argv: readonly string[],
    start: () => Process,
  ) {
    this.#start = start;
  }
  #started(): Process {
    this.#inner ??= this.#start();
    return this.#inner;
  }
  get pid(): number | undefined {
    return this.#inner?.pid;
  }
  get commandId(): string | undefined {
    return this.#inner?.commandId;
  }
  started(): Promise<void> {
    return this.#started().started();
  }
  get stdin(): StdinWriter | null {
    return this.#started().stdin;
  }
  get exited(): boolean {
    return this.#inner?.exited ?? false;
  }
  [Symbol.asyncIterator](): ChunkIterator {
    return this.#started()[Symbol.asyncIterator]();
  }
  wait(): ExecResultPromise {
    return this.#started().wait();
  }
  kill(signal?: Signal): Promise<void> {
    return this.#inner?.kill(signal) ?? Promise.resolve();
  }
  [Symbol.asyncDispose](): Promise<void> {
    return this.#inner?.[Symbol.asyncDispose]() ?? Promise.resolve();
  }
}

export const processCallAdapters: readonly BrokenAdapter[] = [
  {
    name: 'thenable-process',
    defect: 'the Process is also a promise of its result (it has a then method)',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        stream(inner, argv, options) {
          const proc = new WrappedProcess(inner.stream(argv, options), {});
          Object.defineProperty(proc, 'then', {
            value: (onFulfilled?: (value: unknown) => unknown, onRejected?: (reason: unknown) => unknown) =>
              proc.wait().then(onFulfilled, onRejected),
          });
          return proc;
        },
      }),
    caughtBy: { 'stream.synchronous': /the Process has a `then` member/ },
    stillPasses: ['stream.tagged-chunks', 'teardown.dispose'],
  },
  {
    name: 'kill-throws-at-once',
    defect: 'kill() with an unknown signal throws InvalidArgument synchronously instead of returning a rejected promise',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        process: {
          kill(inner, signal) {
            if (!(SIGNALS as readonly string[]).includes(signal)) throw new InvalidArgument('signal', `unknown signal ${String(signal)}`);
            return inner.kill(signal);
          },
        },
      }),
    caughtBy: { 'process.kill': /unexpected InvalidArgument \[INVALID_ARGUMENT\]: signal: unknown signal SIGBOGUS/ },
    stillPasses: ['stream.tagged-chunks'],
  },
  {
    name: 'second-iteration-allowed',
    defect: 'iterating a Process a second time returns the first iterator again instead of raising InvalidState',
    create(lab) {
      const iterators = new WeakMap<Process, ChunkIterator>();
      return wrapSandbox(lab.local(), {
        process: {
          iterator(inner) {
            let iterator = iterators.get(inner);
            if (iterator === undefined) {
              iterator = inner[Symbol.asyncIterator]();
              iterators.set(inner, iterator);
            }
            return iterator;
          },
        },
      });
    },
    caughtBy: { 'stream.single-iteration': /a second \[Symbol.asyncIterator\]\(\) call: expected a synchronous throw/ },
    stillPasses: ['stream.tagged-chunks'],
  },
  {
    name: 'starts-lazily',
    slow: true,
    defect: 'stream() validates at once but starts the command only when the Process is first iterated or waited for',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        stream(inner, argv, options) {
          planStream(argv, options);
          return new LazyProcess(argv, () => inner.stream(argv, options));
        },
      }),
    caughtBy: { 'start.eager': /the command did not start within \d+ ms of the stream\(\) call/ },
    stillPasses: ['stream.tagged-chunks', 'start.spawn-failed'],
  },
  {
    name: 'spawn-failure-as-exit-127',
    defect: 'a command that cannot start is reported as exit code 127 with a message on stderr, as a shell would, instead of SpawnFailed',
    create: (lab) =>
      lab.driver((driver, command) =>
        delegateDriver(driver, {
          async start(events) {
            try {
              return await driver.start(events);
            } catch (error) {
              if ((error as { code?: unknown }).code !== 'SPAWN_FAILED') throw error;
              queueMicrotask(() => {
                events.output('stderr', new TextEncoder().encode(`sh: ${command.argv[0]}: not found\n`));
                events.exit({ exitCode: 127, signal: null });
              });
              return {};
            }
          },
        }),
      ),
    caughtBy: { 'start.spawn-failed': /run\(\): expected a rejection, but it resolved/ },
    stillPasses: ['start.eager'],
  },
];
