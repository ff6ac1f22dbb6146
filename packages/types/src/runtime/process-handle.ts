import { InvalidArgument, InvalidState } from '../errors.js';
import { SIGNALS, type Signal } from '../options.js';
import type { Process, StdinWriter } from '../contract.js';
import type { ExecResult } from '../schema/exec-result.js';
import type { OutputChunk } from '../schema/output-chunk.js';
import type { ProcessCore } from './process-core.js';

const encoder = new TextEncoder();

/** The `stdin` writer of a Process; holds the core only. */
class CoreStdin implements StdinWriter {
  constructor(private readonly core: ProcessCore) {}
  get closed(): boolean {
    return this.core.stdinClosed;
  }
  write(data: Uint8Array | string): Promise<void> {
    if (typeof data === 'string') return this.core.writeStdin(encoder.encode(data));
    if (!(data instanceof Uint8Array)) {
      return Promise.reject(new InvalidArgument('data', 'must be a Uint8Array or a string'));
    }
    return this.core.writeStdin(data);
  }
  end(): Promise<void> {
    return this.core.endStdin();
  }
}

/**
 * Safety net for Processes dropped without being disposed: the public
 * object is collectable because the core never points back at it.
 */
const leaked = new FinalizationRegistry<ProcessCore>((core) => {
  if (core.settled) return;
  process.emitWarning(
    `A Sandstream Process for ${JSON.stringify(core.plan.command.argv)} was garbage-collected while still running; ` +
      'it is being terminated. Use `await using` or call wait() so teardown happens when you mean it to.',
    { code: 'SANDSTREAM_PROCESS_LEAKED' },
  );
  core.dispose().catch(() => undefined);
});

/**
 * The public face of a {@link ProcessCore}. Deliberately holds nothing the
 * core needs, so that dropping it is observable by the finalizer.
 */
export class ProcessHandle implements Process {
  readonly #core: ProcessCore;
  readonly #stdin: StdinWriter | null;
  #iterated = false;

  constructor(core: ProcessCore) {
    this.#core = core;
    this.#stdin = core.plan.interactive ? new CoreStdin(core) : null;
    // No unregister on settle: a reaction on the core's promises would point
    // back at this object and keep it alive. The finalizer checks instead.
    leaked.register(this, core, this);
  }

  get id(): string {
    return this.#core.id;
  }
  get argv(): readonly string[] {
    return this.#core.plan.command.argv;
  }
  get pid(): number | undefined {
    return this.#core.pid;
  }
  get stdin(): StdinWriter | null {
    return this.#stdin;
  }
  get exited(): boolean {
    return this.#core.settled;
  }

  [Symbol.asyncIterator](): AsyncIterator<OutputChunk, undefined> {
    if (this.#iterated) throw new InvalidState('a Process can be iterated only once');
    this.#iterated = true;
    const core = this.#core;
    return {
      next: () => core.next(),
      // Leaving a for-await loop early is leaving the command's scope.
      return: async () => {
        await core.dispose();
        return { value: undefined, done: true };
      },
    };
  }

  wait(): Promise<ExecResult> {
    return this.#core.result();
  }

  kill(signal: Signal = 'SIGTERM'): Promise<void> {
    if (!SIGNALS.includes(signal)) {
      return Promise.reject(new InvalidArgument('signal', `must be one of ${SIGNALS.join(', ')}`));
    }
    return this.#core.kill(signal);
  }

  [Symbol.asyncDispose](): Promise<void> {
    leaked.unregister(this);
    return this.#core.dispose();
  }

  get [Symbol.toStringTag](): string {
    return 'Process';
  }
}
