/** Defects of the capability manifest and of the refusals it implies, limits and user included. */
import {
  CapabilityNotSupported,
  type CapabilityManifest,
  type Process,
  type RunOptions,
  type Sandbox,
  type StreamOptions,
} from '@sandstream/types';
import type { BrokenAdapter } from './adapter.js';
import type { Lab } from './lab.js';
import { ignoringOptions, omit, wrapSandbox, type ChunkIterator } from './wrap.js';

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

export const capabilityAdapters: readonly BrokenAdapter[] = [
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
];
