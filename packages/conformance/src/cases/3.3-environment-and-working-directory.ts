import { check, checkEqual } from '../assert.js';
import { defineCase } from '../case.js';
import { scratch } from './support/observe.js';
import { checkStrings, LARGE_STRING_BYTES, MANY_COUNT, manyTexts, randomText } from './support/payload.js';

// Prints each variable named in the arguments, by name, as `printf '%s\000'`.
const PRINT_VARIABLES = 'for name in "$@"; do eval "printf \'%s\\\\000\' \\"\\${$name}\\""; done';

/** The environment and working directory: SS-ENV-*. */
export const environmentCases = [
  defineCase({
    id: 'environment.env',
    title: '"Variables in env MUST be visible to the command, overriding same-named base variables": the rest of the base environment stays, also with many of them and one larger than a pipe buffer',
    requirements: ['SS-ENV-1'],
    async run(ctx) {
      const result = await ctx.sandbox.run(['sh', '-c', 'printf "%s|%s|%s" "$SANDSTREAM_ONE" "$HOME" "${PATH:+has-path}"'], {
        env: { SANDSTREAM_ONE: 'v a l=ue ✓', HOME: '/sandstream-home' },
      });
      checkEqual(result.stdoutText, 'v a l=ue ✓|/sandstream-home|has-path', 'the environment the command saw');
      // Many variables, about 40 KB in all, then one value of 100 KB: each byte-exact.
      const values = [...manyTexts(MANY_COUNT), randomText(LARGE_STRING_BYTES)];
      const names = values.map((_, i) => (i < MANY_COUNT ? `SANDSTREAM_MANY_${i}` : 'SANDSTREAM_LARGE'));
      const env = Object.fromEntries(names.map((name, i) => [name, values[i]!]));
      const large = await ctx.sandbox.run(['sh', '-c', PRINT_VARIABLES, 'sh', ...names], { env });
      check(large.exitCode === 0, `printing ${names.length} variables given in env failed (exit ${large.exitCode}/${large.signal}): ${large.stderrText.trim().slice(0, 200)}`);
      checkStrings(large.stdout, values, (i) => `${names[i]} (${Buffer.byteLength(values[i]!)} bytes)`, `${names.length} variables (${Buffer.byteLength(values.join(''))} bytes of values) in env`);
      if (!ctx.sandbox.capabilities.streaming) return;
      await using proc = ctx.sandbox.stream(['sh', '-c', 'printf %s "$SANDSTREAM_TWO"'], { env: { SANDSTREAM_TWO: 'streamed' } });
      let text = '';
      for await (const chunk of proc) text += Buffer.from(chunk.data).toString();
      checkEqual(text, 'streamed', 'the environment of a streamed command');
    },
  }),
  defineCase({
    id: 'environment.cwd',
    title: '"cwd MUST be its working directory": under run() and stream()',
    requirements: ['SS-ENV-1'],
    async run(ctx) {
      const dir = await scratch(ctx);
      const real = (await ctx.exec(['sh', '-c', 'cd "$1" && pwd -P', 'sh', dir])).stdoutText;
      const result = await ctx.sandbox.run(['pwd', '-P'], { cwd: dir });
      checkEqual(result.stdoutText, real, 'the working directory of run()');
      if (!ctx.sandbox.capabilities.streaming) return;
      await using proc = ctx.sandbox.stream(['pwd', '-P'], { cwd: dir });
      let text = '';
      for await (const chunk of proc) text += Buffer.from(chunk.data).toString();
      checkEqual(text, real, 'the working directory of stream()');
    },
  }),
];
