import { check, ConformanceFailure, describeError } from '../assert.js';
import { defineCase } from '../case.js';
import type { CaseContext } from '../context.js';
import type { Watched } from './support/observe.js';
import { expectTreeGone, loopingUntilReady, startTree, watchTree, type Tree } from './support/tree.js';

const decoder = new TextDecoder();

/**
 * Iterates until `ready` and every pid is recorded and seen alive (so the
 * tree is whole), then leaves the loop the way `leave` says. Returns the
 * processes.
 */
async function loopUntilReady(ctx: CaseContext, tree: Tree, leave: (processes: Watched[]) => 'break'): Promise<Watched[]> {
  return loopingUntilReady(ctx, tree, async (note) => {
    let processes: Watched[] = [];
    for await (const chunk of tree.proc) {
      if (note(decoder.decode(chunk.data))) {
        processes = await watchTree(ctx, tree);
        if (leave(processes) === 'break') break;
      }
    }
    return processes;
  });
}

class Thrown extends Error {
  constructor(readonly processes: Watched[]) {
    super('thrown by the loop body');
  }
}

/** Leaving a `for await` loop: SS-TEAR-2. */
export const leavingLoopCases = [
  defineCase({
    id: 'teardown.break',
    title: '"MUST terminate the command before control leaves the loop": `break` out of `for await`',
    requirements: ['SS-TEAR-2', 'SS-TEAR-6'],
    needs: ['streaming'],
    async run(ctx) {
      const tree = await startTree(ctx);
      const processes = await loopUntilReady(ctx, tree, () => 'break');
      check(tree.proc.exited, 'control left the loop while the command still runs');
      await expectTreeGone(ctx, tree, processes, 'when control left the loop by break');
    },
  }),
  defineCase({
    id: 'teardown.throw',
    title: '"MUST terminate the command before control leaves the loop": an exception thrown inside `for await` propagates unchanged once the command is gone',
    requirements: ['SS-TEAR-2'],
    needs: ['streaming'],
    async run(ctx) {
      const tree = await startTree(ctx);
      let caught: unknown;
      try {
        await loopUntilReady(ctx, tree, (processes) => {
          throw new Thrown(processes);
        });
      } catch (error) {
        caught = error;
      }
      if (!(caught instanceof Thrown)) {
        throw new ConformanceFailure(`the loop body's exception did not propagate unchanged (got ${describeError(caught)})`);
      }
      check(tree.proc.exited, 'the exception left the loop while the command still runs');
      await expectTreeGone(ctx, tree, caught.processes, 'when a throw inside the loop propagated');
    },
  }),
  defineCase({
    id: 'teardown.return',
    title: '"MUST terminate the command before control leaves the loop": `return` from inside `for await`',
    requirements: ['SS-TEAR-2'],
    needs: ['streaming'],
    async run(ctx) {
      const tree = await startTree(ctx);
      const processes = await loopingUntilReady(ctx, tree, async (note): Promise<Watched[]> => {
        for await (const chunk of tree.proc) {
          if (note(decoder.decode(chunk.data))) return await watchTree(ctx, tree);
        }
        return [];
      });
      check(tree.proc.exited, 'return left the loop while the command still runs');
      await expectTreeGone(ctx, tree, processes, 'when return left the loop');
    },
  }),
];
