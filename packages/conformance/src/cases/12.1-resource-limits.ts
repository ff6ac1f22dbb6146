import type { ExecResult, ResourceLimits } from '@sandstream/types';
import { check } from '../assert.js';
import { defineCase } from '../case.js';
import type { CaseContext } from '../context.js';
import { bound, scratch } from './support/observe.js';
import { startedOnEvidence } from './support/started-evidence.js';

/**
 * Runs `argv` under `options` through run() and, with streaming, through
 * stream() (read to the end), so a limit is proved on both paths. A last
 * argument "run" or "stream" tells the command which path started it.
 */
async function underBoth(
  ctx: CaseContext,
  argv: readonly string[],
  options: { limits: ResourceLimits; timeout?: number },
  at: 'in turn' | 'at once' = 'in turn',
): Promise<Array<{ how: string; result: ExecResult }>> {
  // After a `sh -c` command's words: which call it is, then a token (unused by the script) by which
  // the kit sees it running, so a stream whose start is never confirmed fails in seconds.
  const tagged = (how: string): string[] => (argv[0] === 'sh' ? [...argv, how, ctx.token(`limits-${how}`)] : [...argv]);
  const streamed = async (): Promise<ExecResult> => {
    const words = tagged('stream');
    await using proc = ctx.sandbox.stream(words, options);
    await startedOnEvidence(ctx, proc, words, 'a command with limits');
    for await (const chunk of proc) void chunk;
    return proc.wait();
  };
  if (!ctx.sandbox.capabilities.streaming) return [{ how: 'run()', result: await ctx.sandbox.run(tagged('run'), options) }];
  const [run, stream] =
    at === 'at once'
      ? await Promise.all([ctx.sandbox.run(tagged('run'), options), streamed()])
      : [await ctx.sandbox.run(tagged('run'), options), await streamed()];
  return [
    { how: 'run()', result: run },
    { how: 'stream()', result: stream },
  ];
}

/** Resource limits: SS-LIMIT-*. */
export const limitsCases = [
  defineCase({
    id: 'limits.cpu',
    title: '"a command exceeding a limit in limits MUST be stopped by it, and the result MUST show it": its CPU-time limit, under run() and stream()',
    requirements: ['SS-LIMIT-1'],
    needs: ['resource-limits'],
    timeoutMs: 40_000,
    async run(ctx) {
      // One CPU second takes longer on a loaded machine: the timeout scales with the round trip.
      const timeout = await bound(ctx, 15_000);
      // The two commands spend their CPU seconds at once (the case runs alone: they have the machine).
      for (const { how, result } of await underBoth(ctx, ['sh', '-c', 'while :; do :; done'], { limits: { cpuSeconds: 1 }, timeout }, 'at once')) {
        check(!result.timedOut, `${how}: the CPU limit did not stop a busy loop before the ${timeout} ms timeout`);
        check(result.signal !== null || (result.exitCode ?? 0) !== 0, `${how}: a stopped command reports success (${result.exitCode}/${result.signal})`);
      }
    },
  }),
  defineCase({
    id: 'limits.address-space',
    title: '"a command exceeding a limit in limits MUST be stopped by it, and the result MUST show it": its address-space limit makes it fail, under run() and stream()',
    requirements: ['SS-LIMIT-1'],
    needs: ['resource-limits'],
    timeoutMs: 30_000,
    async run(ctx) {
      // Doubles a string past 64 MiB: a few hundred MiB of memory at the peak.
      const argv = ['awk', 'BEGIN { s = "x"; while (length(s) < 50000000) s = s s; print length(s) }'];
      for (const { how, result } of await underBoth(ctx, argv, { limits: { addressSpaceBytes: 64 * 1024 * 1024 }, timeout: 20_000 })) {
        check(result.signal !== null || (result.exitCode ?? 0) !== 0, `${how}: a command needing far more than its 64 MiB address space reports success (${result.exitCode}/${result.signal})`);
      }
      const control = await ctx.sandbox.run(argv, { limits: { addressSpaceBytes: 4 * 1024 * 1024 * 1024 }, timeout: 20_000 });
      check(control.exitCode === 0, `the same command fails under a 4 GiB limit too (exit ${control.exitCode}/${control.signal}): ${control.stderrText}`);
    },
  }),
  defineCase({
    id: 'limits.file-size',
    title: '"a command exceeding a limit in limits MUST be stopped by it, and the result MUST show it": its file-size limit stops it or makes it fail, under run() and stream()',
    requirements: ['SS-LIMIT-1'],
    needs: ['resource-limits'],
    async run(ctx) {
      const dir = await scratch(ctx);
      for (const { how, result } of await underBoth(ctx, ['sh', '-c', 'head -c 100000 /dev/zero > "$1/big-$2"', 'sh', dir], { limits: { fileSizeBytes: 4096 } })) {
        check(result.signal !== null || (result.exitCode ?? 0) !== 0, `${how}: writing past the limit reports success (${result.exitCode}/${result.signal})`);
      }
      const sizes = await ctx.exec(['sh', '-c', 'for f in "$1"/big-*; do wc -c < "$f"; done; echo end', 'sh', dir]);
      const lines = sizes.stdoutText.trim().split(/\s+/);
      check(lines.pop() === 'end' && lines.length > 0 && lines.every((line) => /^[0-9]+$/.test(line)), `run() lost output of the helper that reads the file sizes: ${JSON.stringify(sizes.stdoutText)}`);
      for (const size of lines) check(Number(size) <= 4096, `a file grew to ${size} bytes past the 4096-byte limit`);
    },
  }),
  defineCase({
    id: 'limits.open-files',
    title: '"a command exceeding a limit in limits MUST be stopped by it, and the result MUST show it": its open-files limit makes it fail, under run() and stream()',
    requirements: ['SS-LIMIT-1'],
    needs: ['resource-limits'],
    async run(ctx) {
      // paste holds every file open at once: 20 of them cannot fit in 8 descriptors.
      const argv = ['paste', ...Array.from({ length: 20 }, () => '/dev/null')];
      for (const { how, result } of await underBoth(ctx, argv, { limits: { openFiles: 8 } })) {
        check(result.exitCode !== 0 || result.signal !== null, `${how}: 20 files were opened under a limit of 8 descriptors (exit ${result.exitCode})`);
      }
      const control = await ctx.sandbox.run(argv, { limits: { openFiles: 64 } });
      check(control.exitCode === 0, `the same command fails under a generous limit too (exit ${control.exitCode}): ${control.stderrText}`);
    },
  }),
];
