/** Defects of kill() and of run()'s onOutput callback. */
import { CallbackFailed, type ExecResult, type Process } from '@sandstream/types';
import type { BrokenAdapter } from './adapter.js';
import { wrapSandbox } from './wrap.js';

export const killAndCallbackAdapters: readonly BrokenAdapter[] = [
  {
    name: 'callback-error-swallowed',
    defect: 'an exception thrown by the onOutput callback is swallowed: the command runs on and run() resolves',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        run(inner, argv, options) {
          const onOutput = options?.onOutput;
          if (typeof onOutput !== 'function') return inner.run(argv, options);
          return inner.run(argv, {
            ...options,
            onOutput(chunk) {
              try {
                onOutput(chunk);
              } catch {
                // swallowed
              }
            },
          });
        },
      }),
    caughtBy: { 'output-cap.on-output-throws': /expected a rejection/ },
  },
  {
    name: 'kill-leader-only',
    defect: 'Process.kill() signals the command\'s own pid, not its process tree',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        process: {
          async kill(inner, signal) {
            if (inner.exited || inner.pid === undefined) return;
            try {
              process.kill(inner.pid, signal);
            } catch {
              // gone meanwhile
            }
          },
        },
      }),
    caughtBy: { 'process.kill': /reached the command but not the child it started/ },
  },
  {
    name: 'on-output-called-again',
    defect: 'after the onOutput callback threw, the command is terminated but output written meanwhile still reaches the callback',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        run(inner, argv, options) {
          const onOutput = options?.onOutput;
          if (typeof onOutput !== 'function') return inner.run(argv, options);
          const controller = new AbortController();
          let failure: { error: unknown } | undefined;
          return inner
            .run(argv, {
              ...options,
              signal: controller.signal,
              onOutput(chunk) {
                try {
                  onOutput(chunk);
                } catch (error) {
                  failure ??= { error };
                  controller.abort();
                }
              },
            })
            .catch((error: unknown) => {
              if (failure === undefined) throw error;
              throw new CallbackFailed((error as { result?: ExecResult }).result, { cause: failure.error });
            });
        },
      }),
    // Whether the output written after the throw reaches the callback before the abort lands is a race the
    // defect does not control; when it does not, the output is missing from CallbackFailed.result instead.
    caughtBy: { 'output-cap.on-output-throws': /the callback was called [2-9] times|CallbackFailed\.result\.stdout \(everything until the command was gone\): got 'one\\n'/ },
  },
  {
    name: 'kill-ignored',
    defect: 'Process.kill() resolves without sending anything',
    create: (lab) => wrapSandbox(lab.local(), { process: { kill: () => Promise.resolve() } }),
    caughtBy: { 'process.kill': /never reached the command/ },
  },
  {
    name: 'kill-crosses-processes',
    defect: 'Process.kill() signals every running command of the sandbox, not just its own',
    create(lab) {
      const started = new Set<WeakRef<Process>>();
      return wrapSandbox(lab.local(), {
        stream(inner, argv, options) {
          const proc = inner.stream(argv, options);
          started.add(new WeakRef(proc));
          return proc;
        },
        process: {
          async kill(_inner, signal) {
            await Promise.all([...started].map((ref) => ref.deref()?.kill(signal)));
          },
        },
      });
    },
    caughtBy: { 'process.kill': /kill\(\) on one Process signalled another/ },
  },
];
