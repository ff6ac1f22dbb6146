import { check } from '../assert.js';
import { defineCase } from '../case.js';
import { expectGoneNow, expectAlive, disposeExplained, readPid, scratch, type Watched } from './support/observe.js';
import { untilReady } from './support/tree.js';

/** Teardown after the caller's signal fired: SS-TEAR-8. */
export const callerSignalCases = [
  defineCase({
    id: 'teardown.after-caller-abort',
    title: '"Teardown MUST complete without the caller\'s AbortSignal": disposal after the signal fired still ends a command that ignores SIGTERM',
    requirements: ['SS-TEAR-8'],
    needs: ['streaming'],
    async run(ctx) {
      const controller = new AbortController();
      const dir = await scratch(ctx);
      const script = 'trap "" TERM; echo $$ > "$1/leader"; echo ready; : > "$1/printed"; while :; do sleep 0.05; done';
      const proc = ctx.sandbox.stream(['sh', '-c', script, 'sh', dir], { signal: controller.signal });
      await untilReady(proc[Symbol.asyncIterator](), { ctx, marker: `${dir}/printed` });
      const leader: Watched[] = [{ pid: await readPid(ctx, `${dir}/leader`, 'the command'), role: 'the command itself' }];
      await expectAlive(ctx, leader, dir);
      controller.abort(new Error('caller gave up'));
      await disposeExplained(ctx, proc, leader, dir);
      check(proc.exited, 'disposal after the caller\'s abort resolved while the command still runs');
      await expectGoneNow(ctx, leader, dir, 'when disposal following the caller\'s abort resolved');
    },
  }),
];
