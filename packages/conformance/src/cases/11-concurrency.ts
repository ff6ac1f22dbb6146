import { check, checkEqual } from '../assert.js';
import { defineCase } from '../case.js';
import { collect } from './support/collect.js';

/** Processes side by side: SS-CONC-*. */
export const concurrencyCases = [
  defineCase({
    id: 'concurrency.separate',
    title: '"Processes running at the same time in one sandbox MUST stay separate": no chunk or exit status crosses between them',
    requirements: ['SS-CONC-1'],
    async run(ctx) {
      const count = 8;
      const procs = Array.from({ length: ctx.sandbox.capabilities.streaming ? count : 0 }, (_, i) =>
        ctx.sandbox.stream(['sh', '-c', `i=0; while [ $i -lt 300 ]; do echo token-${i}; i=$((i+1)); done; exit ${i + 10}`]),
      );
      try {
        const outputs = await Promise.all(procs.map((proc) => collect(proc)));
        for (const [i, got] of outputs.entries()) {
          const text = Buffer.from(got.stdout).toString();
          checkEqual(text, `token-${i}\n`.repeat(300), `the output of process ${i}`);
          const result = await procs[i]!.wait();
          check(result.exitCode === i + 10, `process ${i} reports exit ${result.exitCode}, expected ${i + 10}`);
        }
        check(new Set(procs.map((p) => p.id)).size === procs.length, 'two Processes share an id');
        const runs = await Promise.all(
          Array.from({ length: count }, (_, i) => ctx.sandbox.run(['sh', '-c', `printf run-${i}; exit ${i}`])),
        );
        runs.forEach((result, i) => {
          check(result.stdoutText === `run-${i}` && result.exitCode === i, `concurrent run ${i} got ${JSON.stringify(result.stdoutText)}/${result.exitCode}`);
        });
      } finally {
        await Promise.all(procs.map((proc) => proc[Symbol.asyncDispose]()));
      }
    },
  }),
];
