import { check, checkErrorCode, ConformanceFailure, describeError, HarnessError, rejectionOf } from '../assert.js';
import { defineCase } from '../case.js';
import { helperExec, type CaseContext } from '../context.js';
import { probeAlive } from '../sandbox-scripts.js';
import { arrivalOf } from './support/arrival.js';
import { scratch } from './support/observe.js';
import { environmentGone, openObserver, type Observer } from './support/observer.js';

const decoder = new TextDecoder();

/** `Sandbox.close()`: the cases of SS-TEAR-5. */
export const closeCases = [
  defineCase({
    id: 'teardown.close',
    title: '"Sandbox.close() MUST terminate every process the sandbox started, including Processes never iterated nor disposed, before it resolves": then it refuses new commands',
    requirements: ['SS-TEAR-5'],
    async run(ctx) {
      // The case's own sandbox is closed; an observer looks at its environment afterwards:
      // a handle from the adapter's `attach` hook, or else a second sandbox, which sees the
      // first one's processes only where sandboxes share a host (checked before close()).
      const token = ctx.token('close');
      // Each command creates its own marker once it printed its pid, so a pid held back is told from a slow start.
      const dir = await scratch(ctx);
      const forever = (n: number): Forever => {
        const marker = `${dir}/printed-${n}`;
        return { argv: ['sh', '-c', 'echo $$; : > "$1"; while :; do sleep 0.05; done', 'sh', marker, token], marker };
      };
      const observer = await openObserver(ctx);
      try {
        await closeAndProbe(ctx, observer, forever, token);
      } finally {
        // The case's sandbox is closed: its scratch directory goes through the observer, where it still exists.
        await observer.sandbox.run(['rm', '-rf', dir], { timeout: 10_000 }).catch(() => undefined);
        // The observer's close() must leave the environment alone; a failure midway must not leak it.
        await observer.sandbox.close().catch(() => undefined);
      }
    },
  }),
];

/** A command that runs until it is ended, and the marker it creates once it printed its pid. */
interface Forever {
  readonly argv: string[];
  readonly marker: string;
}

/** Starts commands in `ctx.sandbox`, closes it, and checks through the observer that they are gone. */
async function closeAndProbe(ctx: CaseContext, observer: Observer, forever: (n: number) => Forever, token: string): Promise<void> {
  const { sandbox } = ctx;
  const pids: Array<Promise<number>> = [];
  const printedPid = (command: Forever, how: string): { onOutput(chunk: { data: Uint8Array }): void; pid: Promise<number> } => {
    let resolve!: (pid: number) => void;
    const printed = new Promise<number>((r) => (resolve = r));
    let seen = '';
    const pid = arrivalOf(printed, { ctx, marker: command.marker, what: `the pid printed by a command under ${how}`, got: () => seen });
    pid.catch(() => undefined);
    return { pid, onOutput: (chunk) => { seen += decoder.decode(chunk.data); if (seen.includes('\n')) resolve(Number(seen.trim())); } };
  };
  const runCommand = forever(0);
  const runPid = printedPid(runCommand, 'run()');
  pids.push(runPid.pid);
  const running = sandbox.run(runCommand.argv, { onOutput: runPid.onOutput });
  const settled = running.then(
    (result) => check(result.signal !== null || result.exitCode !== 0, 'a run() cut short by close() reports success'),
    (error: unknown) => {
      throw new ConformanceFailure(`a run() in flight when close() was called must resolve with a result reporting its end; it rejected with ${describeError(error)}`);
    },
  );
  // Awaited below; handled now so an earlier failure cannot leave it unhandled.
  settled.catch(() => undefined);
  const commands = sandbox.capabilities.streaming ? [forever(1), forever(2)] : [];
  const procs = commands.map((command) => sandbox.stream(command.argv));
  for (const [i, proc] of procs.entries()) {
    const pid = printedPid(commands[i]!, 'stream()');
    const iterator = proc[Symbol.asyncIterator]();
    pids.push(pid.pid);
    void iterator.next().then((next) => { if (!next.done) pid.onOutput(next.value); }, () => undefined);
  }
  const limit = await ctx.timeoutFor(10_000);
  const known = await Promise.race([
    Promise.all(pids),
    ctx.sleep(limit).then(() => {
      throw new ConformanceFailure(`the commands never printed their pids (waited ${limit} ms)`);
    }),
  ]);

  // The observation must be able to see the commands before their absence can mean anything.
  const look = helperExec(observer.sandbox, ctx.signal);
  for (const pid of known) {
    if (await probeAlive(look, pid, token)) continue;
    if (observer.attached) {
      throw new HarnessError(`the handle from the attach hook does not see pid ${pid}, a running command of the sandbox it was attached to, so it cannot show that close() ended it`);
    }
    throw new HarnessError(
      `a second sandbox does not see pid ${pid}, a running command of the first: each factory call is its own environment ` +
        '(a VM, a PID namespace), so the kit cannot observe a sandbox after its close(); export `conformanceHooks.attach` ' +
        'from the adapter module (see "Observing a sandbox after close()" in the kit\'s README)',
    );
  }

  await sandbox.close();
  for (const proc of procs) {
    check(proc.exited, 'close() resolved while a Process it started still runs');
    const result = await proc.wait().catch((error: unknown) => {
      throw new ConformanceFailure(`wait() of a Process ended by close() must resolve with its result; it rejected with ${describeError(error)}`);
    });
    check(result.signal !== null || result.exitCode !== 0, 'a command terminated by close() reports success');
  }
  await settled;

  if (await environmentGone(observer, token)) {
    // close() destroyed the environment (the adapter owns it): nothing in it can have survived.
  } else {
    for (const pid of known) {
      check(!(await probeAlive(look, pid, token)), `close() resolved while pid ${pid}, a command it started, still runs`);
    }
  }

  await sandbox.close();
  let refused: unknown;
  try {
    sandbox.stream(['true']);
  } catch (error) {
    refused = error;
  }
  checkErrorCode(refused, 'SANDBOX_CLOSED', 'stream() on a closed sandbox');
  checkErrorCode(await rejectionOf(sandbox.run(['true']), 'run() on a closed sandbox'), 'SANDBOX_CLOSED', 'run() on a closed sandbox');
}
