import { randomBytes } from 'node:crypto';
import { check, checkEqual, checkErrorCode, rejectionOf } from '../assert.js';
import { defineCase } from '../case.js';
import { ALL_BYTES, collect } from './collect.js';

export const stdinCases = [
  defineCase({
    id: 'stdin.echo-and-eof',
    title: 'writes through the stdin writer arrive in order and end() delivers end-of-file',
    requirements: ['SS-STDIN-1'],
    needs: ['stdin', 'streaming'],
    async run(ctx) {
      await using proc = ctx.sandbox.stream(['sh', '-c', 'cat; echo eof-seen >&2'], { stdin: 'pipe' });
      check(proc.stdin !== null, 'stdin: "pipe" gave no writer');
      const writes = Array.from({ length: 200 }, (_, i) => proc.stdin!.write(`${i},`));
      await Promise.all(writes);
      await proc.stdin.end();
      const got = await collect(proc);
      checkEqual(Buffer.from(got.stdout).toString(), Array.from({ length: 200 }, (_, i) => `${i},`).join(''), 'what cat echoed');
      checkEqual(Buffer.from(got.stderr).toString(), 'eof-seen\n', 'what the command printed after end-of-file');
      check((await proc.wait()).exitCode === 0, 'the command did not exit 0 after end-of-file');
    },
  }),
  defineCase({
    id: 'stdin.large-input',
    title: 'several MiB written while output is read concurrently arrive intact',
    requirements: ['SS-STDIN-1'],
    needs: ['stdin', 'streaming'],
    timeoutMs: 30_000,
    async run(ctx) {
      const data = randomBytes(6 * 1024 * 1024);
      await using proc = ctx.sandbox.stream(['cat'], { stdin: 'pipe' });
      const reading = collect(proc);
      for (let offset = 0; offset < data.length; offset += 100_000) {
        await proc.stdin!.write(new Uint8Array(data.subarray(offset, offset + 100_000)));
      }
      await proc.stdin!.end();
      const got = await reading;
      checkEqual(got.stdout, new Uint8Array(data), 'what cat echoed');
    },
  }),
  defineCase({
    id: 'stdin.write-after-exit',
    title: 'writing after the command exited rejects with StdinClosed',
    requirements: ['SS-STDIN-1'],
    needs: ['stdin', 'streaming'],
    async run(ctx) {
      await using proc = ctx.sandbox.stream(['true'], { stdin: 'pipe' });
      await proc.wait();
      const error = await rejectionOf(proc.stdin!.write('too late'), 'write() after exit');
      checkErrorCode(error, 'STDIN_CLOSED', 'write() after exit');
      await proc.stdin!.end();
      await using ended = ctx.sandbox.stream(['cat'], { stdin: 'pipe' });
      await ended.stdin!.end();
      checkErrorCode(await rejectionOf(ended.stdin!.write('x'), 'write() after end()'), 'STDIN_CLOSED', 'write() after end()');
      check(ended.stdin!.closed, 'the writer does not report itself closed after end()');
    },
  }),
  defineCase({
    id: 'stdin.run-input',
    title: 'run() with input delivers the bytes, then end-of-file',
    requirements: ['SS-STDIN-2'],
    needs: ['stdin'],
    async run(ctx) {
      const result = await ctx.sandbox.run(['sh', '-c', 'cat; echo eof-seen >&2'], { input: ALL_BYTES });
      checkEqual(result.stdout, ALL_BYTES, 'what cat echoed');
      checkEqual(result.stderrText, 'eof-seen\n', 'stderr after end-of-file');
      const text = await ctx.sandbox.run(['cat'], { input: 'héllo' });
      checkEqual(text.stdoutText, 'héllo', 'string input, UTF-8 encoded');
      const ignored = await ctx.sandbox.run(['true'], { input: new Uint8Array(1 << 20) });
      check(ignored.exitCode === 0, 'a command that does not read its input should still succeed');
    },
  }),
  defineCase({
    id: 'concurrency.separate',
    title: 'processes running at once stay separate: no chunk or exit status crosses between them',
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
  defineCase({
    id: 'limits.cpu',
    title: 'a command exceeding its CPU-time limit is stopped, and the result shows it',
    requirements: ['SS-LIMIT-1'],
    needs: ['resource-limits'],
    timeoutMs: 20_000,
    async run(ctx) {
      const result = await ctx.sandbox.run(['sh', '-c', 'while :; do :; done'], { limits: { cpuSeconds: 1 }, timeout: 15_000 });
      check(!result.timedOut, 'the CPU limit did not stop a busy loop before the 15 s timeout');
      check(result.signal !== null || (result.exitCode ?? 0) !== 0, `a stopped command reports success (${result.exitCode}/${result.signal})`);
    },
  }),
  defineCase({
    id: 'limits.file-size',
    title: 'a command exceeding its file-size limit is stopped or fails, and the result shows it',
    requirements: ['SS-LIMIT-1'],
    needs: ['resource-limits'],
    async run(ctx) {
      const dir = await ctx.scratch();
      const result = await ctx.sandbox.run(['sh', '-c', 'head -c 100000 /dev/zero > "$1/big"', 'sh', dir], {
        limits: { fileSizeBytes: 4096 },
      });
      check(result.signal !== null || (result.exitCode ?? 0) !== 0, `writing past the limit reports success (${result.exitCode}/${result.signal})`);
      const size = (await ctx.exec(['sh', '-c', 'wc -c < "$1/big"', 'sh', dir])).stdoutText.trim();
      check(Number(size) <= 4096, `the file grew to ${size} bytes past the 4096-byte limit`);
    },
  }),
  defineCase({
    id: 'limits.open-files',
    title: 'a command exceeding its open-files limit fails, and the result shows it',
    requirements: ['SS-LIMIT-1'],
    needs: ['resource-limits'],
    async run(ctx) {
      // paste holds every file open at once: 20 of them cannot fit in 8 descriptors.
      const argv = ['paste', ...Array.from({ length: 20 }, () => '/dev/null')];
      const result = await ctx.sandbox.run(argv, { limits: { openFiles: 8 } });
      check(result.exitCode !== 0 || result.signal !== null, `20 files were opened under a limit of 8 descriptors (exit ${result.exitCode})`);
      const control = await ctx.sandbox.run(argv, { limits: { openFiles: 64 } });
      check(control.exitCode === 0, `the same command fails under a generous limit too (exit ${control.exitCode}): ${control.stderrText}`);
    },
  }),
  defineCase({
    id: 'user.run-as',
    title: 'the user option runs the command as that account',
    requirements: ['SS-USER-1'],
    needs: ['user'],
    async run(ctx) {
      const expected = (await ctx.exec(['id', '-u', 'nobody'])).stdoutText.trim();
      check(/^[0-9]+$/.test(expected), 'the sandbox has no "nobody" account to run as');
      const result = await ctx.sandbox.run(['id', '-u'], { user: 'nobody' });
      checkEqual(result.stdoutText.trim(), expected, 'the uid the command ran as');
      if (!ctx.sandbox.capabilities.streaming) return;
      await using proc = ctx.sandbox.stream(['id', '-u'], { user: 'nobody' });
      const got = await collect(proc);
      checkEqual(Buffer.from(got.stdout).toString().trim(), expected, 'the uid a streamed command ran as');
    },
  }),
];
