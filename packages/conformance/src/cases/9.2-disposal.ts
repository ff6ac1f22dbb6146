import { check } from '../assert.js';
import { defineCase } from '../case.js';
import { disposeExplained, survivorsFailure, type Watched } from './support/observe.js';
import { expectTreeGone, startTree, treePrinted, untilReady, watchTree } from './support/tree.js';

/** Disposing a Process: SS-TEAR-1. */
export const disposalCases = [
  defineCase({
    id: 'teardown.dispose',
    title: '"MUST terminate the command, and the returned promise MUST NOT resolve before it is gone": leaving an `await using` scope ends the running command and its tree',
    requirements: ['SS-TEAR-1', 'SS-TEAR-6'],
    needs: ['streaming'],
    async run(ctx) {
      const tree = await startTree(ctx);
      let processes: Watched[] = [];
      try {
        await using proc = tree.proc;
        await untilReady(proc[Symbol.asyncIterator](), treePrinted(ctx, tree));
        processes = await watchTree(ctx, tree);
      } catch (error) {
        throw await survivorsFailure(ctx, processes, tree.dir, 'disposal at `await using` scope exit', error);
      }
      check(tree.proc.exited, 'after disposal resolved, the Process does not report the command as exited');
      // Not the adapter's report: the processes themselves must be gone at the first look.
      await expectTreeGone(ctx, tree, processes, 'when disposal at `await using` scope exit resolved');
    },
  }),
  defineCase({
    id: 'teardown.dispose-never-iterated',
    title: '"whose command is still running MUST terminate the command": disposing a Process that was never iterated',
    requirements: ['SS-TEAR-1'],
    needs: ['streaming'],
    async run(ctx) {
      const tree = await startTree(ctx);
      const processes = await watchTree(ctx, tree);
      await disposeExplained(ctx, tree.proc, processes, tree.dir);
      check(tree.proc.exited, 'disposal resolved while the command still runs');
      await expectTreeGone(ctx, tree, processes, 'when disposing a never-iterated Process resolved');
    },
  }),
];
