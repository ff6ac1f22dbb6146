/**
 * An adapter whose termination path is broken end to end: disposing a
 * Process never resolves and terminates nothing, and close() resolves at
 * once without terminating anything either. A case that disposes a Process
 * hangs until its time limit, and what it started keeps running: the kit
 * must kill it afterwards.
 */
import type { ExecResult, OutputChunk, Process, Sandbox, Signal, StdinWriter } from '@sandstream/types';
import type { Lab } from './lab.js';

/** A Process whose disposal hangs, delegating everything else. */
class HangingDisposal implements Process {
  constructor(private readonly inner: Process) {}
  get id(): string {
    return this.inner.id;
  }
  get argv(): readonly string[] {
    return this.inner.argv;
  }
  get pid(): number | undefined {
    return this.inner.pid;
  }
  get commandId(): string | undefined {
    return (this.inner as { commandId?: string }).commandId;
  }
  get stdin(): StdinWriter | null {
    return this.inner.stdin;
  }
  get exited(): boolean {
    return this.inner.exited;
  }
  started(): Promise<void> {
    return (this.inner as { started?: () => Promise<void> }).started?.() ?? Promise.resolve();
  }
  [Symbol.asyncIterator](): AsyncIterator<OutputChunk, undefined> {
    const source = this.inner[Symbol.asyncIterator]();
    // Leaving a loop early goes through disposal too: it hangs as well.
    return { next: () => source.next(), return: () => new Promise(() => undefined) };
  }
  wait(): Promise<ExecResult> {
    return this.inner.wait();
  }
  kill(signal?: Signal): Promise<void> {
    return this.inner.kill(signal);
  }
  [Symbol.asyncDispose](): Promise<void> {
    return new Promise(() => undefined);
  }
}

/** The local adapter of `lab` with that defect. */
export function hangingTeardownSandbox(lab: Lab): Sandbox {
  const inner = lab.local();
  let closed = false;
  const refuse = (): Error => Object.assign(new Error('the sandbox is closed'), { name: 'SandboxClosed', code: 'SANDBOX_CLOSED' });
  const sandbox: Sandbox = {
    name: 'hanging-teardown',
    get capabilities() {
      return inner.capabilities;
    },
    native: inner.native,
    ...({ termination: (inner as { termination?: unknown }).termination } as object),
    run: async (argv, options) => {
      if (closed) throw refuse();
      return inner.run(argv, options);
    },
    stream: (argv, options) => {
      if (closed) throw refuse();
      return new HangingDisposal(inner.stream(argv, options));
    },
    close: async () => {
      closed = true;
    },
    [Symbol.asyncDispose]: () => sandbox.close(),
  };
  return sandbox;
}
