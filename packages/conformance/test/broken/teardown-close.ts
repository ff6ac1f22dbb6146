/** Defects of Sandbox.close() and of the safety net for a Process never disposed. */
import { InvalidState, SandboxClosed, type Process, type Sandbox } from '@sandstream/types';
import type { BrokenAdapter } from './adapter.js';
import { wrapSandbox } from './wrap.js';

export const closeAdapters: readonly BrokenAdapter[] = [
  {
    name: 'close-leaves-processes',
    defect: 'close() refuses new commands but does not terminate the running ones',
    create(lab) {
      let closed = false;
      return wrapSandbox(lab.local(), {
        run: (inner, argv, options) => (closed ? Promise.reject(new SandboxClosed()) : inner.run(argv, options)),
        stream(inner, argv, options) {
          if (closed) throw new SandboxClosed();
          return inner.stream(argv, options);
        },
        close() {
          closed = true;
          return Promise.resolve();
        },
      });
    },
    caughtBy: { 'teardown.close': /close\(\) resolved while a Process it started still runs/ },
    stillPasses: ['teardown.dispose'],
  },
  {
    name: 'close-reopens',
    defect: 'after close(), the sandbox reconnects and accepts new commands instead of raising SandboxClosed',
    create(lab) {
      let current: Sandbox = lab.local();
      let closed = false;
      const fresh = (): Sandbox => {
        if (closed) {
          closed = false;
          current = lab.local();
        }
        return current;
      };
      return wrapSandbox(current, {
        run: (_inner, argv, options) => fresh().run(argv, options),
        stream: (_inner, argv, options) => fresh().stream(argv, options),
        async close() {
          await current.close();
          closed = true;
        },
      });
    },
    caughtBy: { 'teardown.close': /stream\(\) on a closed sandbox: expected an error with code SANDBOX_CLOSED/ },
    stillPasses: ['teardown.dispose'],
  },
  {
    name: 'close-not-idempotent',
    defect: 'a second close() rejects with InvalidState instead of resolving',
    create(lab) {
      let closing: Promise<void> | undefined;
      return wrapSandbox(lab.local(), {
        close(inner) {
          if (closing !== undefined) return Promise.reject(new InvalidState('the sandbox is already closed'));
          closing = inner.close();
          return closing;
        },
      });
    },
    caughtBy: { 'teardown.close': /unexpected InvalidState \[INVALID_STATE\]: the sandbox is already closed/ },
    stillPasses: ['teardown.dispose'],
  },
  {
    name: 'close-abandons-runs',
    defect: 'close() rejects run() calls in flight with SandboxClosed and leaves their commands running',
    create(lab) {
      // run() commands live in a pool that close() forgets; the lab closes it.
      const pool = lab.local();
      const inFlight = new Set<(error: Error) => void>();
      let closed = false;
      return wrapSandbox(lab.local(), {
        run(_inner, argv, options) {
          if (closed) return Promise.reject(new SandboxClosed());
          return new Promise((resolve, reject) => {
            inFlight.add(reject);
            pool
              .run(argv, options)
              .then(resolve, reject)
              .finally(() => inFlight.delete(reject));
          });
        },
        async close(inner) {
          closed = true;
          for (const reject of inFlight) reject(new SandboxClosed());
          await inner.close();
        },
      });
    },
    caughtBy: { 'teardown.close': /must resolve with a result reporting its end; it rejected with SandboxClosed/ },
  },
  {
    name: 'no-gc-safety-net',
    slow: true,
    defect: 'the sandbox keeps every Process it returned reachable, so a dropped Process is never collected and never terminated',
    create(lab) {
      const kept: Process[] = [];
      return wrapSandbox(lab.local(), {
        stream(inner, argv, options) {
          const proc = inner.stream(argv, options);
          kept.push(proc);
          return proc;
        },
      });
    },
    caughtBy: { 'teardown.garbage-collected': /^advisory \(SHOULD\): a Process dropped without disposal kept its command running/ },
    advisory: true,
    stillPasses: ['teardown.dispose'],
  },
];
