/** Defects of the calls themselves: stream(), arguments, environment, capabilities, standard input. */
import {
  CapabilityNotSupported,
  InvalidArgument,
  SIGNALS,
  planStream,
  validateArgv,
  type CapabilityManifest,
  type Process,
  type RunOptions,
  type Sandbox,
  type Signal,
  type StdinWriter,
  type StreamOptions,
} from '@sandstream/types';
import type { BrokenAdapter } from './adapter.js';
import type { Lab } from './lab.js';
import { delegateDriver, ignoringOptions, omit, pick, WrappedProcess, wrapSandbox, type ChunkIterator } from './wrap.js';

type ExecResultPromise = ReturnType<Process['wait']>;

/** A Process for a command that was refused: everything about it rejects with `error`. */
class RefusedProcess implements Process {
  static #count = 0;
  readonly id = `refused:${++RefusedProcess.#count}`;
  readonly pid = undefined;
  readonly commandId = undefined;
  readonly stdin = null;
  readonly exited = true;
  readonly #error: Error;
  constructor(
    readonly argv: readonly string[],
    error: Error,
  ) {
    this.#error = error;
  }
  [Symbol.asyncIterator](): ChunkIterator {
    return { next: () => Promise.reject(this.#error) };
  }
  started(): Promise<void> {
    return Promise.reject(this.#error);
  }
  wait(): ExecResultPromise {
    return Promise.reject(this.#error);
  }
  kill(): Promise<void> {
    return Promise.resolve();
  }
  [Symbol.asyncDispose](): Promise<void> {
    return Promise.resolve();
  }
}

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

/** Whether `argv` is one the contract accepts. */
function validArgv(argv: unknown): argv is readonly string[] {
  try {
    validateArgv(argv);
    return true;
  } catch {
    return false;
  }
}

/** `argv` as one string for `sh -c`, joined with spaces and unquoted. */
function throughShell(argv: readonly string[]): readonly string[] {
  return validArgv(argv) ? ['sh', '-c', argv.join(' ')] : argv;
}

const RUN_KEYS = new Set(['timeout', 'env', 'cwd', 'signal', 'limits', 'user', 'input', 'maxOutputBytes', 'onOutput']);
const STREAM_KEYS = new Set(['timeout', 'env', 'cwd', 'signal', 'limits', 'user', 'input', 'stdin']);

/** A local sandbox without `stdin`, whose capability refusals pass through `refuse`. */
function withoutStdin(
  lab: Lab,
  refuse: {
    stream(inner: Sandbox, error: CapabilityNotSupported, argv: readonly string[], options: StreamOptions | undefined): Process;
    run(inner: Sandbox, error: CapabilityNotSupported, argv: readonly string[], options: RunOptions | undefined): Promise<never>;
  },
): Sandbox {
  return wrapSandbox(lab.local({ capabilities: { stdin: false } }), {
    stream(inner, argv, options) {
      try {
        return inner.stream(argv, options);
      } catch (error) {
        if (error instanceof CapabilityNotSupported) return refuse.stream(inner, error, argv, options);
        throw error;
      }
    },
    async run(inner, argv, options) {
      try {
        return await inner.run(argv, options);
      } catch (error) {
        if (error instanceof CapabilityNotSupported) return refuse.run(inner, error, argv, options);
        throw error;
      }
    },
  });
}

export const callAdapters: readonly BrokenAdapter[] = [
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
  {
    name: 'argv-through-shell',
    defect: 'argv is joined with spaces and run by sh -c',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        run: (inner, argv, options) => inner.run(throughShell(argv), options),
        stream: (inner, argv, options) => inner.stream(throughShell(argv), options),
      }),
    // The shell chokes on the hostile arguments' quotes before printf runs.
    caughtBy: { 'arguments.argv-byte-exact': /printf failed: sh: .*(Syntax error|unterminated|Unterminated)/ },
    // The kit's own helper commands break too: a failure of the adapter, never a harness error.
    alsoFails: ['arguments.invalid-options'],
    stillPasses: ['arguments.invalid-argv'],
  },
  {
    name: 'argv-coerced',
    defect: 'argv elements that are not strings are converted with String() instead of refused',
    create: (lab) => {
      const coerce = (argv: readonly string[]): readonly string[] => (Array.isArray(argv) ? argv.map(String) : argv);
      return wrapSandbox(lab.local(), {
        run: (inner, argv, options) => inner.run(coerce(argv), options),
        stream: (inner, argv, options) => inner.stream(coerce(argv), options),
      });
    },
    caughtBy: { 'arguments.invalid-argv': /run\(\["echo",1\]\): expected a rejection, but it resolved/ },
    stillPasses: ['arguments.invalid-options', 'arguments.argv-byte-exact'],
  },
  {
    name: 'unknown-options-ignored',
    defect: 'options the adapter does not know are dropped silently instead of refused',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        run: (inner, argv, options) => inner.run(argv, pick(options, RUN_KEYS)),
        stream: (inner, argv, options) => inner.stream(argv, pick(options, STREAM_KEYS)),
      }),
    caughtBy: { 'arguments.invalid-options': /run\(\["true"\], \{"nonsense":1\}\): expected a rejection, but it resolved/ },
    stillPasses: ['arguments.invalid-argv', 'environment.env'],
  },
  {
    name: 'env-ignored',
    defect: 'the env option is not passed on',
    create: (lab) => wrapSandbox(lab.local(), ignoringOptions('env')),
    caughtBy: { 'environment.env': /the environment the command saw: got '\|/ },
    stillPasses: ['environment.cwd'],
  },
  {
    name: 'cwd-ignored',
    defect: 'the cwd option is not passed on',
    create: (lab) => wrapSandbox(lab.local(), ignoringOptions('cwd')),
    caughtBy: { 'environment.cwd': /the working directory of run\(\)/ },
    stillPasses: ['environment.env', 'arguments.argv-byte-exact'],
  },
  {
    name: 'manifest-invalid',
    defect: 'the capability manifest has an unprefixed extension key ("network" instead of "x-network")',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        capabilities: (inner) => ({ ...inner.capabilities, network: true }) as CapabilityManifest,
      }),
    caughtBy: { 'capabilities.manifest': /the manifest does not match the schema: \/ must NOT have additional properties/ },
    stillPasses: ['stream.tagged-chunks'],
    viaRunCase:
      'runConformance copies the manifest into the report unchecked, so the report fails its own schema and ' +
      'runConformance throws HarnessError instead of reporting capabilities.manifest as failed',
  },
  {
    name: 'manifest-changes',
    defect: 'the capability manifest changes once the sandbox has run a command',
    create(lab) {
      let used = false;
      return wrapSandbox(lab.local(), {
        run(inner, argv, options) {
          used = true;
          return inner.run(argv, options);
        },
        capabilities: (inner) => (used ? { ...inner.capabilities, user: !inner.capabilities.user } : inner.capabilities),
      });
    },
    caughtBy: { 'capabilities.manifest': /the manifest changed after a run\(\)/ },
    stillPasses: ['stream.tagged-chunks'],
  },
  {
    name: 'capability-error-late',
    defect: 'without stdin, stream({ stdin: "pipe" }) returns a Process whose iteration and wait() reject with CapabilityNotSupported, instead of throwing',
    create: (lab) =>
      withoutStdin(lab, {
        stream: (_inner, error, argv) => new RefusedProcess(argv, error),
        run: (_inner, error) => Promise.reject(error),
      }),
    caughtBy: { 'capabilities.absent-stdin': /stream\(\) needing stdin: expected a synchronous throw, but it returned/ },
    stillPasses: ['capabilities.manifest', 'stream.tagged-chunks'],
  },
  {
    name: 'capability-error-untyped',
    defect: 'without stdin, the refusal is a plain Error rather than CapabilityNotSupported',
    create: (lab) =>
      withoutStdin(lab, {
        stream(_inner, error) {
          throw new Error(error.message);
        },
        run: (_inner, error) => Promise.reject(new Error(error.message)),
      }),
    caughtBy: { 'capabilities.absent-stdin': /expected an error with code CAPABILITY_NOT_SUPPORTED, got Error: / },
    stillPasses: ['capabilities.manifest'],
  },
  {
    name: 'capability-error-misnamed',
    defect: 'without stdin, the CapabilityNotSupported error names "streaming"',
    create: (lab) =>
      withoutStdin(lab, {
        stream(_inner, error) {
          throw new CapabilityNotSupported('streaming', error.operation);
        },
        run: (_inner, error) => Promise.reject(new CapabilityNotSupported('streaming', error.operation)),
      }),
    caughtBy: { 'capabilities.absent-stdin': /the error names capability "streaming", expected "stdin"/ },
    stillPasses: ['capabilities.manifest'],
  },
  {
    name: 'capability-error-after-side-effect',
    defect: 'without stdin, the command is started (with no standard input) before CapabilityNotSupported is raised',
    create: (lab) =>
      withoutStdin(lab, {
        stream(inner, error, argv, options) {
          void inner.stream(argv, omit(options, 'stdin')).wait().catch(() => undefined);
          throw error;
        },
        run(inner, error, argv, options) {
          void inner.run(argv, omit(options, 'input')).catch(() => undefined);
          return Promise.reject(error);
        },
      }),
    caughtBy: { 'capabilities.absent-stdin': /stream\(\): the command ran although the capability error was raised/ },
    stillPasses: ['capabilities.manifest'],
  },
  {
    name: 'capability-error-thrown-by-run',
    defect: 'without stdin, run({ input }) throws CapabilityNotSupported synchronously instead of rejecting',
    create: (lab) =>
      wrapSandbox(lab.local({ capabilities: { stdin: false } }), {
        run(inner, argv, options) {
          if (options?.input !== undefined) throw new CapabilityNotSupported('stdin', 'run()');
          return inner.run(argv, options);
        },
      }),
    caughtBy: { 'capabilities.absent-stdin': /run\(\) must reject, not throw synchronously/ },
    stillPasses: ['capabilities.manifest'],
  },
  {
    name: 'limits-ignored',
    defect: 'resource-limits is advertised but the limits option is not passed on',
    needs: 'resource-limits',
    create: (lab) => wrapSandbox(lab.local(), ignoringOptions('limits')),
    caughtBy: {
      'limits.file-size': /writing past the limit reports success/,
      'limits.open-files': /20 files were opened under a limit of 8 descriptors/,
    },
    stillPasses: ['capabilities.manifest'],
  },
  {
    name: 'user-ignored',
    defect: 'user is advertised but the user option is not passed on',
    needs: 'user',
    create: (lab) => wrapSandbox(lab.local(), ignoringOptions('user')),
    caughtBy: { 'user.run-as': /the uid the command ran as/ },
    stillPasses: ['capabilities.manifest'],
  },
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
    caughtBy: {
      'stdin.echo-and-eof': /did not finish within/,
      'stdin.run-input': /did not finish within/,
    },
    stillPasses: ['stdin.write-after-exit'],
    caseTimeoutMs: 3_000,
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
