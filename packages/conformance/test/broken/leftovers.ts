/**
 * An adapter whose termination path is broken end to end: disposing a
 * Process never resolves and terminates nothing, and close() resolves at
 * once without terminating anything either. A case that disposes a Process
 * hangs until its time limit, and what it started keeps running: the kit
 * must kill it afterwards.
 */
import { SandboxClosed, type Sandbox } from '@sandstream/types';
import type { Lab } from './lab.js';
import { wrapSandbox } from './wrap.js';
import { wrapBackground } from './wrap-background.js';

/** The local adapter of `lab` with that defect. */
export function hangingTeardownSandbox(lab: Lab): Sandbox {
  let closed = false;
  const never = (): Promise<never> => new Promise(() => undefined);
  return wrapSandbox(lab.local(), {
    name: 'hanging-teardown',
    run: (inner, argv, options) => (closed ? Promise.reject(new SandboxClosed()) : inner.run(argv, options)),
    stream(inner, argv, options) {
      if (closed) throw new SandboxClosed();
      return inner.stream(argv, options);
    },
    process: {
      iterator(inner) {
        const source = inner[Symbol.asyncIterator]();
        // Leaving a loop early goes through disposal too: it hangs as well.
        return { next: () => source.next(), return: never };
      },
      dispose: never,
    },
    close: async () => {
      closed = true;
    },
  });
}

/**
 * The local adapter of `lab` whose close() does nothing, and whose
 * background Processes only detach when disposed: whatever a case leaves to
 * disposal or to close() runs on after the case, even after one that passed.
 */
export function leakingSandbox(lab: Lab): Sandbox {
  return wrapBackground(lab.local(), {
    starter: { dispose: (inner) => inner.detach() },
    close: async () => undefined,
  });
}
