import { ConformanceFailure } from '../assert.js';
import { defineCase } from '../case.js';
import type { CaseContext } from '../context.js';
import { bound, expectAlive, readPid, scratch, termination } from './support/observe.js';

/** The safety net for a Process never disposed: SS-TEAR-9. */
export const safetyNetCases = [
  defineCase({
    id: 'teardown.garbage-collected',
    title: '"SHOULD terminate the command of a Process that is garbage-collected without being disposed, and SHOULD warn, naming the command": a Process nobody holds',
    requirements: ['SS-TEAR-9'],
    needs: ['streaming'],
    expectedWarnings: ['SANDSTREAM_PROCESS_LEAKED'],
    async run(ctx) {
      const gc = await exposeGc();
      const dir = await scratch(ctx);
      const script = 'echo $$ > "$1/leader"; while :; do sleep 0.05; done';
      // The warning must name the command; the scratch directory is part of its argv.
      const warnings: string[] = [];
      const onWarning = (warning: Error): void => {
        warnings.push(warning.message);
      };
      process.on('warning', onWarning);
      try {
        await dropAndCollect(ctx, gc, script, dir);
        const within = await bound(ctx, 2_000);
        await ctx.poll(async () => (warnings.some((w) => w.includes(dir)) ? true : undefined), within, 'the command was terminated, but no process warning named it');
      } finally {
        process.off('warning', onWarning);
      }
    },
  }),
];

/** Starts a command whose Process nobody keeps, then collects garbage until the command is gone. */
async function dropAndCollect(ctx: CaseContext, gc: () => void, script: string, dir: string): Promise<void> {
  // Held until the probe has seen the command alive: a collection before that (V8's own, or a
  // case beside this one calling gc()) would end it early and the probe could prove nothing.
  // Then the one reference goes, and no local variable keeps the Process reachable.
  const held: { proc?: unknown } = { proc: ctx.sandbox.stream(['sh', '-c', script, 'sh', dir]) };
  const leader = await readPid(ctx, `${dir}/leader`, 'the dropped command');
  await expectAlive(ctx, [{ pid: leader, role: 'the dropped command' }], dir);
  delete held.proc;
  const { graceMs } = termination(ctx);
  const deadline = performance.now() + graceMs + (await bound(ctx, 5_000));
  while (await ctx.isAlive(leader, dir)) {
    if (performance.now() > deadline) {
      throw new ConformanceFailure('a Process dropped without disposal kept its command running after garbage collection');
    }
    gc();
    await ctx.sleep(50);
  }
}

async function exposeGc(): Promise<() => void> {
  const existing = (globalThis as { gc?: () => void }).gc;
  if (existing) return existing;
  const { setFlagsFromString } = await import('node:v8');
  const { runInNewContext } = await import('node:vm');
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

