/** Defects of kill() and of run()'s onOutput callback. */
import { CallbackFailed, type ExecResult, type Process, type Sandbox } from '@sandstream/types';
import type { ProcessDriver } from '@sandstream/types/runtime';
import type { BrokenAdapter } from './adapter.js';
import type { Lab } from './lab.js';
import { delegateDriver, wrapSandbox } from './wrap.js';

/**
 * A driver whose signal() closes its link to a running command instead of
 * signalling it, as an exec-style adapter does that closes its connection
 * (an SSH channel, say) to "kill": the command runs on, and from then on
 * nothing of it (output, the leader's end, the exit, a failure) reaches the
 * runtime. The close itself succeeds, so signal() resolves; the runtime's
 * termination sequence then waits out the grace period after SIGTERM and
 * the kill wait after SIGKILL before it gives the command up as lost.
 *
 * Once the leader has ended, the runtime's wind-down of what is left of the
 * tree is signalled as before: the local driver reports the leader's end
 * before its pipes close even for `sh -c 'echo ready'`, and an exec-style
 * adapter learns of that end with its exit status, not by a kill of its own.
 */
export function droppingLinkOnSignal(driver: ProcessDriver): ProcessDriver {
  let dropped = false;
  let leaderEnded = false;
  return delegateDriver(driver, {
    start: (events) =>
      driver.start({
        output: (stream, data) => void (dropped || events.output(stream, data)),
        leaderExited: (status) => {
          leaderEnded = true;
          if (!dropped) events.leaderExited(status);
        },
        exit: (status) => void (dropped || events.exit(status)),
        fail: (error) => void (dropped || events.fail(error)),
      }),
    signal: (signal) => {
      if (leaderEnded && !dropped) return driver.signal(signal);
      dropped = true;
      return Promise.resolve();
    },
  });
}

/** The local adapter whose kill (every signal, the runtime's teardown included) drops the link to the command. */
export function killDropsLink(lab: Lab): Sandbox {
  return lab.driver(droppingLinkOnSignal);
}

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
  {
    name: 'kill-drops-link',
    defect: 'a signal closes the adapter\'s connection to the command instead of signalling it: the command runs on, and nothing of it is heard again',
    create: killDropsLink,
    // The SIGUSR1 is never delivered: the command's marker never appears. Disposing of the case's two
    // commands then waits out the grace period and the kill wait for each before the case ends.
    caughtBy: { 'process.kill': /kill\('SIGUSR1'\) never reached the command/ },
    slow: true,
  },
];
