/** Defects of teardown: leaving a scope, aborting, timing out, closing, killing. */
import { CallbackFailed, InvalidState, SandboxClosed, type ExecResult, type OutputChunk, type Process, type Sandbox } from '@sandstream/types';
import type { ProcessDriver } from '@sandstream/types/runtime';
import type { BrokenAdapter } from './adapter.js';
import { alterResult, delay, delegateDriver, ignoringOptions, omit, withPid, wrapSandbox, type ChunkIterator } from './wrap.js';

const EMPTY = new Uint8Array(0);

/** Iterates until the first chunk arrives, then leaves the loop with `break`. */
async function breakAfterFirstChunk(proc: Process): Promise<void> {
  for await (const chunk of proc) {
    void chunk;
    break;
  }
}

/** A command that prints `ready` and runs until it is killed. */
const FOREVER = ['sh', '-c', 'echo ready; while :; do sleep 0.05; done'];

/**
 * The local driver on a backend that can signal only the command's own
 * pid: every signal goes to the leader instead of its process group, so
 * neither teardown nor the wind-down after the leader exits reaches the
 * rest of the tree, and the runtime gives up after its kill wait.
 */
function leaderOnly(driver: ProcessDriver): ProcessDriver {
  let leader: number | undefined;
  let leaderGone = false;
  const inner = withPid(driver, (events) => ({
    output: (stream, data) => events.output(stream, data),
    exit: (status) => events.exit(status),
    fail: (error) => events.fail(error),
    leaderExited(status) {
      leaderGone = true;
      events.leaderExited(status);
    },
  }));
  return {
    ...inner,
    async start(events) {
      const started = await inner.start(events);
      leader = started.pid;
      return started;
    },
    async signal(signal) {
      // Once the leader was reaped its pid may belong to someone else.
      if (leader === undefined || leaderGone) return;
      try {
        process.kill(leader, signal);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
      }
    },
  };
}

export const teardownAdapters: readonly BrokenAdapter[] = [
  {
    name: 'leaks-on-break',
    defect: 'the iterator\'s return() resolves without disposing, so a loop left by break leaves the command running',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        process: {
          iterator(inner): ChunkIterator {
            const iterator = inner[Symbol.asyncIterator]();
            return {
              next: () => iterator.next(),
              return: () => Promise.resolve({ value: undefined, done: true }),
            };
          },
        },
      }),
    caughtBy: { 'teardown.break': /control left the loop while the command still runs/ },
    // The language calls the same return() for break, return and throw.
    alsoFails: ['teardown.return', 'teardown.throw'],
    stillPasses: ['teardown.dispose', 'teardown.dispose-never-iterated'],
  },
  {
    name: 'leaks-on-throw',
    defect:
      'the iterator has no return() method, so an exception thrown in the loop body leaves the command running ' +
      '(an iterator cannot tell a throw from a break: the language calls the same return() for both)',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        process: {
          iterator(inner): ChunkIterator {
            const iterator = inner[Symbol.asyncIterator]();
            return { next: () => iterator.next() };
          },
        },
      }),
    caughtBy: { 'teardown.throw': /the exception left the loop while the command still runs/ },
    alsoFails: ['teardown.break', 'teardown.return'],
    stillPasses: ['teardown.dispose'],
  },
  {
    name: 'loop-exit-before-termination',
    defect: 'the iterator\'s return() starts disposal without awaiting it, so control leaves the loop while the command still runs',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        process: {
          iterator(inner): ChunkIterator {
            const iterator = inner[Symbol.asyncIterator]();
            return {
              next: () => iterator.next(),
              return: () => {
                void iterator.return?.().catch(() => undefined);
                return Promise.resolve({ value: undefined, done: true });
              },
            };
          },
        },
      }),
    caughtBy: { 'teardown.break': /control left the loop while the command still runs/ },
    alsoFails: ['teardown.return', 'teardown.throw'],
  },
  {
    name: 'leaks-on-dispose',
    defect: '[Symbol.asyncDispose]() resolves without terminating the command',
    create: (lab) => wrapSandbox(lab.local(), { process: { dispose: () => Promise.resolve() } }),
    caughtBy: {
      'teardown.dispose': /after disposal resolved, the Process does not report the command as exited/,
      'teardown.dispose-never-iterated': /disposal resolved while the command still runs/,
    },
    // It disposes explicitly, then expects the SIGTERM handler to have run.
    alsoFails: ['teardown.sigterm-first'],
    stillPasses: ['teardown.break'],
  },
  {
    name: 'dispose-resolves-early',
    defect: '[Symbol.asyncDispose]() starts termination but resolves before the command is gone',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        process: {
          dispose(inner) {
            void inner[Symbol.asyncDispose]().catch(() => undefined);
            return Promise.resolve();
          },
        },
      }),
    caughtBy: { 'teardown.dispose': /after disposal resolved, the Process does not report the command as exited/ },
    stillPasses: ['teardown.break'],
  },
  {
    name: 'abort-ignored',
    slow: true,
    defect: 'the caller\'s AbortSignal is not passed on by stream() or run(): aborting neither terminates nor rejects',
    create: (lab) => wrapSandbox(lab.local(), ignoringOptions('signal')),
    caughtBy: {
      'teardown.abort-stream': /did not finish within/,
      'teardown.abort-run': /did not finish within/,
      'teardown.abort-before-start': /run\(\): expected a rejection, but it resolved/,
    },
    stillPasses: ['stream.tagged-chunks'],
    caseTimeoutMs: 3_000,
  },
  {
    name: 'aborted-signal-starts-command',
    defect: 'an already-aborted signal is noticed only after the command was started',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        run(inner, argv, options) {
          if (options?.signal?.aborted) void inner.run(argv, omit(options, 'signal')).catch(() => undefined);
          return inner.run(argv, options);
        },
        stream(inner, argv, options) {
          if (options?.signal?.aborted) void inner.stream(argv, omit(options, 'signal')).wait().catch(() => undefined);
          return inner.stream(argv, options);
        },
      }),
    caughtBy: { 'teardown.abort-before-start': /run\(\) with an already-aborted signal started the command/ },
    stillPasses: ['teardown.abort-stream', 'teardown.abort-run'],
  },
  {
    name: 'kills-only-leader',
    slow: true,
    defect: 'signals go to the command\'s pid, not its process group, so what the command started is never signalled',
    // A short kill wait, so the runtime gives up soon with TransportError.
    create: (lab) => lab.driver((driver) => leaderOnly(driver), { killWaitMs: 1_000 }),
    caughtBy: {
      // The failure names the process that survived, not only that no exit came.
      'teardown.dispose': /disposal at `await using` scope exit rejected with TransportError.*; still running: pid \d+ \(a child of the command/,
      'teardown.leader-exit': /rejected with TransportError.*; still running: pid \d+ \(a background child/,
    },
    alsoFails: ['teardown.break', 'teardown.sigkill-after-grace'],
    stillPasses: ['teardown.sigterm-first', 'result.exit-codes'],
  },
  {
    name: 'no-grace-period',
    defect: 'termination sends SIGKILL at once instead of SIGTERM',
    create: (lab) =>
      lab.driver((driver) => delegateDriver(driver, { signal: (signal) => driver.signal(signal === 'SIGTERM' ? 'SIGKILL' : signal) })),
    caughtBy: {
      'teardown.sigterm-first': /SIGTERM handler never ran/,
      'teardown.sigkill-after-grace': /the command never reported SIGTERM; was it killed outright\?/,
    },
    stillPasses: ['teardown.dispose', 'teardown.break'],
  },
  {
    name: 'never-escalates',
    slow: true,
    defect: 'termination never sends SIGKILL (it repeats SIGTERM), so a command that ignores SIGTERM is never stopped',
    // A short kill wait, so the runtime gives up quickly with TransportError.
    create: (lab) =>
      lab.driver((driver) => delegateDriver(driver, { signal: (signal) => driver.signal(signal === 'SIGKILL' ? 'SIGTERM' : signal) }), {
        killWaitMs: 1_000,
      }),
    caughtBy: {
      // The failure names the process that survived, not only that no exit came.
      'teardown.sigkill-after-grace': /rejected with TransportError \[TRANSPORT\]: .*; still running: pid \d+ \(the command itself/,
      'teardown.after-caller-abort': /TransportError \[TRANSPORT\]: no exit was reported/,
    },
    stillPasses: ['teardown.dispose', 'teardown.sigterm-first'],
  },
  {
    name: 'timeout-ignored',
    slow: true,
    defect: 'the timeout option is not passed on: a command past its timeout keeps running',
    create: (lab) => wrapSandbox(lab.local(), ignoringOptions('timeout')),
    caughtBy: {
      'teardown.timeout-run': /did not finish within/,
      'teardown.timeout-stream': /did not finish within/,
    },
    stillPasses: ['stream.tagged-chunks'],
    caseTimeoutMs: 3_000,
  },
  {
    name: 'timeout-not-flagged',
    defect: 'a command ended by its timeout reports timedOut: false',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        run: async (inner, argv, options) => alterResult(await inner.run(argv, options), { timedOut: false }),
        process: { wait: async (inner) => alterResult(await inner.wait(), { timedOut: false }) },
      }),
    caughtBy: {
      'teardown.timeout-run': /timedOut is not true/,
      'teardown.timeout-stream': /timedOut is not true/,
    },
    stillPasses: ['result.schema'],
  },
  {
    name: 'timeout-drops-output',
    defect: 'run() past its timeout returns empty output instead of what the command wrote before',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        async run(inner, argv, options) {
          const result = await inner.run(argv, options);
          return result.timedOut ? alterResult(result, { stdout: EMPTY, stderr: EMPTY }) : result;
        },
      }),
    caughtBy: { 'teardown.timeout-run': /stdout before the timeout was not kept/ },
    stillPasses: ['teardown.timeout-stream'],
  },
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
