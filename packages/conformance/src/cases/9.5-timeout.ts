import type { ExecResult } from '@sandstream/types';
import { check, ConformanceFailure } from '../assert.js';
import { defineCase } from '../case.js';
import { expectGoneNow, readMarker, readPid, scratch } from './support/observe.js';
import { expectTreeGone, startTree } from './support/tree.js';

const decoder = new TextDecoder();

/** The timeout option: SS-TEAR-4. */
export const timeoutCases = [
  defineCase({
    id: 'teardown.timeout-run',
    title: '"When timeout elapses, the command MUST be terminated and its result MUST have timedOut: true": run() keeps the output written before it',
    requirements: ['SS-TEAR-4'],
    async run(ctx) {
      // The command marks that both lines are written. Output counts as "before the timeout" only
      // once the mark shows it was: on a loaded backend the timeout may fall between the lines, and
      // then the run is repeated with twice the timeout rather than judged on what was never written.
      // It then becomes one process (exec): a shell with a child of its own would report the
      // child's death by a signal on stderr ("Terminated") when a backend signals the tree
      // process by process, and that is output the command wrote, not lost or added.
      const script = 'echo $$ > "$1/leader"; echo partial; echo err-partial >&2; : > "$1/written"; exec sleep 600';
      let timeout = await ctx.timeoutFor(500);
      let dir = '';
      let result: ExecResult | undefined;
      for (let attempt = 0; attempt < 4; attempt++, timeout *= 2) {
        dir = await scratch(ctx);
        result = await ctx.sandbox.run(['sh', '-c', script, 'sh', dir], { timeout });
        check(result.timedOut === true, 'timedOut is not true after the timeout elapsed');
        if ((await readMarker(ctx, `${dir}/written`)) !== undefined) break;
        result = undefined;
      }
      if (result === undefined) {
        throw new ConformanceFailure(`the command never got to write two lines before its timeout, up to ${timeout / 2} ms`);
      }
      check(decoder.decode(result.stdout) === 'partial\n', `stdout before the timeout was not kept (got ${JSON.stringify(decoder.decode(result.stdout))})`);
      check(decoder.decode(result.stderr) === 'err-partial\n', `stderr before the timeout was not kept (got ${JSON.stringify(decoder.decode(result.stderr))})`);
      check(result.exitCode !== 0, 'a command ended by the timeout reports exit code 0');
      const leader = await readPid(ctx, `${dir}/leader`, 'the timed-out command');
      await expectGoneNow(ctx, [{ pid: leader, role: 'the command itself' }], dir, 'when run() resolved after the timeout');
    },
  }),
  defineCase({
    id: 'teardown.timeout-stream',
    title: '"keeping the output produced before (captured by run(), delivered to the iterator by stream())": stream() past its timeout ends the command and its tree, and wait() reports timedOut',
    requirements: ['SS-TEAR-4', 'SS-TEAR-6'],
    needs: ['streaming'],
    async run(ctx) {
      const tree = await startTree(ctx, { timeout: await ctx.timeoutFor(1_000) });
      let seen = '';
      for await (const chunk of tree.proc) seen += decoder.decode(chunk.data);
      check(seen.includes('ready'), 'output printed before the timeout was not delivered');
      const result = await tree.proc.wait();
      check(result.timedOut === true, 'timedOut is not true after the timeout elapsed');
      await expectTreeGone(ctx, tree, await tree.processes(), 'when wait() resolved after the timeout');
    },
  }),
];
