/** Defects of teardown on its way out: leaving a loop, disposal, abort, the termination sequence, timing out. */
import type { ProcessDriver } from '@sandstream/types/runtime';
import type { BrokenAdapter } from './adapter.js';
import { alterResult, delegateDriver, ignoringOptions, omit, withPid, wrapSandbox, type ChunkIterator } from './wrap.js';

const EMPTY = new Uint8Array(0);

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

export const teardownExitAdapters: readonly BrokenAdapter[] = [
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
];
