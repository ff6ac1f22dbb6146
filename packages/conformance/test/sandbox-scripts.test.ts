/**
 * The scripts the kit runs inside a sandbox to look at its processes must
 * never mistake themselves for what they look for: their own argv carries
 * the token, and on a busy host (or in a small PID namespace) the pid they
 * probe may be their own.
 */
import { afterAll, describe, expect, test } from 'vitest';
import { createLocalSandbox } from '@sandstream/adapter-local';
import type { Sandbox } from '@sandstream/types';
import { helperExec } from '../src/context.js';
import { probeAlive, splitToken, sweep } from '../src/sandbox-scripts.js';

const sandbox = createLocalSandbox({ graceMs: 300 });
afterAll(() => sandbox.close());

/** A sandbox whose helper commands probe their own pid: the worst case of pid reuse. */
function probingItself(inner: Sandbox): Sandbox {
  return {
    ...inner,
    run: (argv, options) => {
      const [sh, c, script, name, , ...rest] = argv;
      return inner.run([sh!, c!, `set -- "$$" "$@"; ${script}`, name!, ...rest], options);
    },
  } as Sandbox;
}

describe('the liveness probe', () => {
  test('sees a live command by pid and token, and not by another token', async () => {
    const token = 'sandstream-probe-test-1';
    await using proc = sandbox.stream(['sh', '-c', 'echo $$; while :; do sleep 0.05; done', 'sh', token]);
    const first = await proc[Symbol.asyncIterator]().next();
    const pid = Number(Buffer.from(first.value!.data).toString().trim());
    const exec = helperExec(sandbox);
    expect(await probeAlive(exec, pid, token)).toBe(true);
    expect(await probeAlive(exec, pid)).toBe(true);
    expect(await probeAlive(exec, pid, 'sandstream-probe-other')).toBe(false);
  });

  test('never counts itself, although its own argv carries the token', async () => {
    expect(await probeAlive(helperExec(probingItself(sandbox)), 1, 'sandstream-probe-self')).toBe(false);
  });

  test('passes the token in two halves, so no single argument of the probe holds it', () => {
    const [a, b] = splitToken('sandstream-close-0123');
    expect(a + b).toBe('sandstream-close-0123');
    expect(`${a} ${b}`).not.toContain('sandstream-close-0123');
  });
});

describe('the sweep after a failed case', () => {
  test('kills what carries the token and nothing else, and survives its own argv', async () => {
    const token = 'sandstream-sweep-test-1';
    const marked = sandbox.stream(['sh', '-c', 'echo $$; while :; do sleep 0.05; done', 'sh', token]);
    const other = sandbox.stream(['sh', '-c', 'echo $$; while :; do sleep 0.05; done', 'sh', 'sandstream-sweep-other']);
    const pids = [];
    for (const proc of [marked, other]) {
      const next = await proc[Symbol.asyncIterator]().next();
      pids.push(Number(Buffer.from(next.value!.data).toString().trim()));
    }
    const killed = await sweep(sandbox, [token]);
    // The marked shell, and possibly a child it is forking for its next `sleep`: until that child
    // execs, it carries the shell's argv and so the token (seen on a loaded machine).
    expect(killed).toContain(pids[0]);
    expect(killed).not.toContain(pids[1]);
    const result = await marked.wait();
    expect(result.signal).toBe('SIGKILL');
    expect(other.exited).toBe(false);
    await other[Symbol.asyncDispose]();
  });
});
