import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidArgument } from '@sandstream/types';
import { unless } from '@sandstream/test-support/skips';
import { findPrlimit } from '../src/limits.js';
import { collect, expectValidResult, testSandbox, within } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'sandstream-limits-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const prlimit = findPrlimit();

unless(describe, prlimit === undefined ? 'prlimit was not found' : undefined)('resource limits via prlimit', () => {
  it('advertises the capability and names prlimit in native', () => {
    const sb = testSandbox();
    expect(sb.capabilities['resource-limits']).toBe(true);
    expect(sb.native.prlimitPath).toBe(prlimit);
  });

  it('cpuSeconds ends a busy loop by SIGXCPU (or SIGKILL at the hard limit)', async () => {
    const sb = testSandbox();
    const result = await within(
      30_000,
      sb.run(['sh', '-c', 'while :; do :; done'], { limits: { cpuSeconds: 1 }, timeout: 25_000 }),
      'run()',
    );
    expect(result.timedOut).toBe(false);
    expect(result.exitCode).toBeNull();
    expect(['SIGXCPU', 'SIGKILL']).toContain(result.signal);
    expectValidResult(result);
  });

  it('fileSizeBytes stops a write beyond it (SIGXFSZ or a failure)', async () => {
    const sb = testSandbox({ cwd: dir });
    const result = await sb.run(['dd', 'if=/dev/zero', 'of=big', 'bs=4096', 'count=4'], {
      limits: { fileSizeBytes: 1024 },
    });
    expect(result.signal === 'SIGXFSZ' || (result.exitCode !== null && result.exitCode !== 0)).toBe(true);
    expect(statSync(join(dir, 'big')).size).toBeLessThanOrEqual(1024);
    const unlimited = await sb.run(['dd', 'if=/dev/zero', 'of=big', 'bs=4096', 'count=4']);
    expect(unlimited.exitCode).toBe(0);
  });

  it('openFiles stops a command opening more descriptors', async () => {
    const sb = testSandbox();
    const script = ['sh', '-c', 'exec 3</dev/null 4</dev/null 5</dev/null 6</dev/null 7</dev/null; echo opened'];
    const limited = await sb.run(script, { limits: { openFiles: 5 } });
    expect(limited.exitCode).not.toBe(0);
    expect(limited.stdoutText).toBe('');
    const unlimited = await sb.run(script);
    expect(unlimited.exitCode).toBe(0);
    expect(unlimited.stdoutText).toBe('opened\n');
    const reported = await sb.run(['sh', '-c', 'ulimit -n'], { limits: { openFiles: 77 } });
    expect(reported.stdoutText.trim()).toBe('77');
  });

  it('addressSpaceBytes stops a large allocation', async () => {
    const sb = testSandbox();
    const argv = ['dd', 'if=/dev/zero', 'of=/dev/null', 'bs=64M', 'count=1'];
    const limited = await sb.run(argv, { limits: { addressSpaceBytes: 32 * 1024 * 1024 } });
    expect(limited.signal !== null || limited.exitCode !== 0).toBe(true);
    expect((await sb.run(argv)).exitCode).toBe(0);
  });

  it('apply to stream() too, and leave the pid and group the command\'s own', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(['sh', '-c', 'echo $$; ulimit -t; exec sleep 0.1'], { limits: { cpuSeconds: 7 } });
    const { stdoutText } = await collect(proc);
    const [pid, cpu] = stdoutText.trim().split('\n');
    expect(Number(pid)).toBe(proc.pid);
    expect(cpu).toBe('7');
    expect((await proc.wait()).exitCode).toBe(0);
  });

  it('does not leak the limits into later commands', async () => {
    const sb = testSandbox();
    await sb.run(['true'], { limits: { openFiles: 10 } });
    const later = await sb.run(['sh', '-c', 'ulimit -n']);
    expect(later.stdoutText.trim()).not.toBe('10');
  });

  it('rejects invalid limits with InvalidArgument', async () => {
    const sb = testSandbox();
    await expect(sb.run(['true'], { limits: { cpuSeconds: 0 } })).rejects.toBeInstanceOf(InvalidArgument);
    await expect(sb.run(['true'], { limits: { openFiles: 1.5 } })).rejects.toBeInstanceOf(InvalidArgument);
    await expect(sb.run(['true'], { limits: { stack: 1 } as never })).rejects.toMatchObject({ key: 'options.limits.stack' });
  });
});
