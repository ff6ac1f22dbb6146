import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CapabilityNotSupported, InvalidArgument, SpawnFailed } from '@sandstream/types';
import { unless } from '@sandstream/test-support/skips';
import { createLocalSandbox } from '../src/index.js';
import { findPrlimit } from '../src/limits.js';
import { collect, expectValidResult, MARKER, nodeScript, RUN_ID, testSandbox } from './helpers.js';

const dir = realpathSync(mkdtempSync(join(tmpdir(), 'sandstream-args-')));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Prints its arguments as JSON, each decoded as the bytes the kernel gave it. */
const PRINT_ARGS = nodeScript('process.stdout.write(JSON.stringify(process.argv.slice(1)))');
const PRINT_ENV = nodeScript('process.stdout.write(JSON.stringify(process.env))');

const HOSTILE = [
  '',
  ' ',
  "it's",
  '"double"',
  '$(touch pwned)',
  '`touch pwned`',
  '$HOME',
  '${PATH}',
  'a;b',
  'a && b',
  'a | b',
  '> out',
  '*',
  '?',
  '[a-z]*',
  '~',
  '-n',
  '--version',
  '-',
  'line1\nline2',
  'tab\there',
  'carriage\rreturn',
  '\\',
  'naïve',
  '日本語',
  '🦀',
  'x'.repeat(10_000),
];

describe('argv', () => {
  it('passes every element byte-exact as one argument, never through a shell (run)', async () => {
    const sb = testSandbox({ cwd: dir });
    const result = await sb.run([...PRINT_ARGS, ...HOSTILE]);
    expect(result.exitCode).toBe(0);
    expect(JSON.parse(result.stdoutText)).toEqual(HOSTILE);
    expectValidResult(result);
    // Nothing was interpreted: no command substitution ran.
    const listing = await sb.run(['ls', '-A', dir]);
    expect(listing.stdoutText).toBe('');
  });

  it('passes every element byte-exact as one argument (stream)', async () => {
    const sb = testSandbox({ cwd: dir });
    await using proc = sb.stream([...PRINT_ARGS, ...HOSTILE]);
    const { stdoutText } = await collect(proc);
    expect(JSON.parse(stdoutText)).toEqual(HOSTILE);
    expect((await proc.wait()).exitCode).toBe(0);
  });

  it('does not interpret a leading dash or a glob as argv[0]-level syntax', async () => {
    const sb = testSandbox({ cwd: dir });
    const result = await sb.run(['printf', '%s|', '-n', '*', '$(id)']);
    expect(result.stdoutText).toBe('-n|*|$(id)|');
  });

  it('rejects malformed argv with InvalidArgument before starting anything', async () => {
    const sb = testSandbox();
    await expect(sb.run([])).rejects.toBeInstanceOf(InvalidArgument);
    await expect(sb.run([''])).rejects.toMatchObject({ key: 'argv[0]' });
    await expect(sb.run(['echo', 'a\0b'])).rejects.toMatchObject({ key: 'argv[1]' });
    expect(() => sb.stream([])).toThrow(InvalidArgument);
    expect(() => sb.stream(['echo', 1 as unknown as string])).toThrow(InvalidArgument);
  });
});

describe('environment', () => {
  it('merges per-call env over the base environment', async () => {
    const sb = testSandbox({ env: { PATH: process.env['PATH'] ?? '', BASE_ONLY: 'base', SHARED: 'from-base' } });
    const result = await sb.run(PRINT_ENV, { env: { SHARED: 'from-call', CALL_ONLY: 'call' } });
    const env = JSON.parse(result.stdoutText) as Record<string, string>;
    expect(env['BASE_ONLY']).toBe('base');
    expect(env['SHARED']).toBe('from-call');
    expect(env['CALL_ONLY']).toBe('call');
    expect(env[MARKER]).toBe(RUN_ID);
  });

  it('uses the given base environment instead of the parent one', async () => {
    process.env['SANDSTREAM_PARENT_ONLY'] = 'parent';
    try {
      const sb = testSandbox({ env: { PATH: process.env['PATH'] ?? '' } });
      const env = JSON.parse((await sb.run(PRINT_ENV)).stdoutText) as Record<string, string>;
      expect(env['SANDSTREAM_PARENT_ONLY']).toBeUndefined();
      const inheriting = testSandbox();
      const inherited = JSON.parse((await inheriting.run(PRINT_ENV)).stdoutText) as Record<string, string>;
      expect(inherited['SANDSTREAM_PARENT_ONLY']).toBe('parent');
    } finally {
      delete process.env['SANDSTREAM_PARENT_ONLY'];
    }
  });

  it('inherits the parent environment when no env option is given', async () => {
    process.env['SANDSTREAM_INHERIT_CHECK'] = 'yes';
    try {
      const sb = createLocalSandbox({ graceMs: 100 });
      try {
        const result = await sb.run(PRINT_ENV, { env: { [MARKER]: RUN_ID } });
        expect(JSON.parse(result.stdoutText)['SANDSTREAM_INHERIT_CHECK']).toBe('yes');
      } finally {
        await sb.close();
      }
    } finally {
      delete process.env['SANDSTREAM_INHERIT_CHECK'];
    }
  });

  it('snapshots the base environment: a caller mutating its object later changes nothing', async () => {
    const base: Record<string, string> = { PATH: process.env['PATH'] ?? '', VALUE: 'before' };
    const sb = testSandbox({ env: base });
    base['VALUE'] = 'after';
    const env = JSON.parse((await sb.run(PRINT_ENV)).stdoutText) as Record<string, string>;
    expect(env['VALUE']).toBe('before');
  });

  it('keeps one call\'s env out of the next call', async () => {
    const sb = testSandbox();
    await sb.run(['true'], { env: { ONE_CALL: '1' } });
    const env = JSON.parse((await sb.run(PRINT_ENV)).stdoutText) as Record<string, string>;
    expect(env['ONE_CALL']).toBeUndefined();
  });

  it('rejects an invalid env option', async () => {
    const sb = testSandbox();
    await expect(sb.run(['true'], { env: { 'A=B': 'x' } })).rejects.toBeInstanceOf(InvalidArgument);
    await expect(sb.run(['true'], { env: { A: 1 as unknown as string } })).rejects.toMatchObject({ key: 'options.env.A' });
  });

  it('rejects an invalid base environment when the sandbox is created', () => {
    expect(() => createLocalSandbox({ env: { A: 1 as unknown as string } })).toThrow(InvalidArgument);
    expect(() => createLocalSandbox({ env: { 'A=B': 'x' } })).toThrow(InvalidArgument);
    expect(() => createLocalSandbox({ env: 'PATH=/bin' as unknown as Record<string, string> })).toThrow(InvalidArgument);
  });

  it('passes a variable named __proto__ like any other', async () => {
    const sb = testSandbox();
    const env = JSON.parse('{"__proto__": "kept", "SANDSTREAM_OTHER": "also"}') as Record<string, string>;
    const result = await sb.run(['env'], { env });
    expect(result.stdoutText).toMatch(/^__proto__=kept$/m);
    expect(result.stdoutText).toMatch(/^SANDSTREAM_OTHER=also$/m);
  });
});

describe('working directory', () => {
  it('uses the sandbox cwd by default and the per-call cwd when given', async () => {
    const sub = join(dir, 'sub');
    const sb = testSandbox({ cwd: dir });
    await sb.run(['mkdir', '-p', sub]);
    expect((await sb.run(['pwd', '-P'])).stdoutText).toBe(`${dir}\n`);
    expect((await sb.run(['pwd', '-P'], { cwd: sub })).stdoutText).toBe(`${sub}\n`);
    await using proc = sb.stream(['pwd', '-P'], { cwd: sub });
    expect((await collect(proc)).stdoutText).toBe(`${sub}\n`);
  });

  it("defaults to this process's cwd", async () => {
    const sb = testSandbox();
    expect((await sb.run(['pwd', '-P'])).stdoutText).toBe(`${realpathSync(process.cwd())}\n`);
  });

  it('resolves a relative per-call cwd against the sandbox cwd', async () => {
    const sb = testSandbox({ cwd: dir });
    await sb.run(['mkdir', '-p', 'rel']);
    expect((await sb.run(['pwd', '-P'], { cwd: 'rel' })).stdoutText).toBe(`${join(dir, 'rel')}\n`);
  });

  it('rejects an invalid cwd option', () => {
    expect(() => createLocalSandbox({ cwd: '' })).toThrow(InvalidArgument);
    expect(() => createLocalSandbox({ cwd: 42 as unknown as string })).toThrow(InvalidArgument);
  });
});

describe('spawn failures', () => {
  it('rejects run() with SpawnFailed for a missing binary', async () => {
    const sb = testSandbox();
    const error = await sb.run(['/nonexistent/sandstream-binary']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SpawnFailed);
    expect((error as SpawnFailed).argv).toEqual(['/nonexistent/sandstream-binary']);
    await expect(sb.run(['sandstream-no-such-command-on-path'])).rejects.toBeInstanceOf(SpawnFailed);
  });

  it('rejects iteration and wait() with SpawnFailed for a missing binary', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(['sandstream-no-such-command-on-path']);
    await expect(collect(proc)).rejects.toBeInstanceOf(SpawnFailed);
    await expect(proc.wait()).rejects.toBeInstanceOf(SpawnFailed);
    expect(proc.exited).toBe(true);
    expect(proc.pid).toBeUndefined();
  });

  it('an option of the other call says which call takes it, as InvalidArgument', async () => {
    const sb = testSandbox();
    expect(() => sb.stream(['true'], { onOutput: () => undefined } as never)).toThrow(InvalidArgument);
    expect(() => sb.stream(['true'], { onOutput: () => undefined } as never)).toThrow('`onOutput` is an option of run(), not stream()');
    const error = await sb.run(['true'], { stdin: 'pipe' } as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgument);
    expect((error as InvalidArgument).message).toContain('`stdin` is an option of stream(), not run()');
  });

  it('rejects with SpawnFailed for a binary that is not executable', async () => {
    const sb = testSandbox({ cwd: dir });
    await sb.run(['sh', '-c', 'printf "#!/bin/sh\\n" > not-exec && chmod 0644 not-exec']);
    await expect(sb.run([join(dir, 'not-exec')])).rejects.toBeInstanceOf(SpawnFailed);
  });

  it('rejects with SpawnFailed for a missing per-call or default cwd, naming the directory', async () => {
    const sb = testSandbox();
    const error = await sb.run(['true'], { cwd: '/nonexistent/sandstream-dir' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SpawnFailed);
    expect((error as Error).message).toContain('/nonexistent/sandstream-dir');
    const badDefault = testSandbox({ cwd: '/nonexistent/sandstream-dir' });
    await expect(badDefault.run(['true'])).rejects.toBeInstanceOf(SpawnFailed);
    await using proc = badDefault.stream(['true']);
    await expect(proc.wait()).rejects.toBeInstanceOf(SpawnFailed);
  });

  unless(it, findPrlimit() === undefined ? 'prlimit was not found' : undefined)('rejects with SpawnFailed for a missing binary under resource limits', async () => {
    const sb = testSandbox();
    await expect(sb.run(['sandstream-no-such-command-on-path'], { limits: { openFiles: 64 } })).rejects.toBeInstanceOf(
      SpawnFailed,
    );
    await expect(sb.run([join(dir, 'missing')], { limits: { openFiles: 64 } })).rejects.toBeInstanceOf(SpawnFailed);
  });
});

describe('createLocalSandbox options', () => {
  it('advertises streaming and stdin, and reports its native handle', () => {
    const sb = testSandbox();
    expect(sb.name).toBe('local');
    expect(sb.capabilities.streaming).toBe(true);
    expect(sb.capabilities.stdin).toBe(true);
    expect(sb.native.kind).toBe('local');
    expect(Object.isFrozen(sb.capabilities)).toBe(true);
  });

  it('turns capabilities off, and the sandbox then refuses what they cover', async () => {
    const sb = testSandbox({ capabilities: { streaming: false, stdin: false, 'resource-limits': false, user: false } });
    expect(sb.capabilities).toEqual({ streaming: false, stdin: false, 'resource-limits': false, user: false, attach: true, 'replay-tail': true, pty: true });
    expect(() => sb.stream(['true'])).toThrow(CapabilityNotSupported);
    await expect(sb.run(['cat'], { input: 'x' })).rejects.toMatchObject({ capability: 'stdin' });
    await expect(sb.run(['true'], { limits: { cpuSeconds: 1 } })).rejects.toMatchObject({ capability: 'resource-limits' });
    await expect(sb.run(['true'], { user: 'nobody' })).rejects.toMatchObject({ capability: 'user' });
    expect((await sb.run(['true'])).exitCode).toBe(0);
  });

  it('raises a capability error before starting anything', async () => {
    const marker = join(dir, 'capability-side-effect');
    const sb = testSandbox({ capabilities: { stdin: false } });
    expect(() => sb.stream(['touch', marker], { stdin: 'pipe' })).toThrow(CapabilityNotSupported);
    await expect(sb.run(['touch', marker], { input: 'x' })).rejects.toBeInstanceOf(CapabilityNotSupported);
    expect((await sb.run(['ls', dir])).stdoutText).not.toContain('capability-side-effect');
  });

  it('leaves capabilities on when the override says true', () => {
    const sb = testSandbox({ capabilities: { streaming: true, stdin: true } });
    expect(sb.capabilities.streaming).toBe(true);
    expect(sb.capabilities.stdin).toBe(true);
  });

  it('rejects unknown capabilities and non-boolean values with InvalidArgument', () => {
    const unknown = (() => {
      try {
        createLocalSandbox({ capabilities: { teleport: false } as never });
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(unknown).toBeInstanceOf(InvalidArgument);
    expect(unknown).toMatchObject({ key: 'options.capabilities.teleport' });
    // Names inherited from Object.prototype are not capabilities either.
    expect(() => createLocalSandbox({ capabilities: { toString: false } as never })).toThrow(InvalidArgument);
    expect(() => createLocalSandbox({ capabilities: { constructor: false } as never })).toThrow(InvalidArgument);
    expect(() => createLocalSandbox({ capabilities: { stdin: 'no' } as never })).toThrow(InvalidArgument);
    expect(() => createLocalSandbox({ capabilities: 'none' as never })).toThrow(InvalidArgument);
  });

  it('rejects an invalid grace period', () => {
    expect(() => createLocalSandbox({ graceMs: -1 })).toThrow(InvalidArgument);
    expect(() => createLocalSandbox({ graceMs: Number.NaN })).toThrow(InvalidArgument);
    expect(() => createLocalSandbox({ graceMs: Infinity })).toThrow(InvalidArgument);
  });

  it('rejects unknown options', () => {
    expect(() => createLocalSandbox({ shell: true } as never)).toThrow(InvalidArgument);
  });

  it('works with the default export the conformance kit loads', async () => {
    const { default: createSandbox } = await import('../src/index.js');
    const sb = await createSandbox();
    try {
      expect((await sb.run(['true'], { env: { [MARKER]: RUN_ID } })).exitCode).toBe(0);
    } finally {
      await sb.close();
    }
  });

  it('is a valid async disposable', async () => {
    let sandbox;
    {
      await using sb = testSandbox();
      sandbox = sb;
      expect((await sb.run(['true'])).exitCode).toBe(0);
    }
    await expect(sandbox.run(['true'])).rejects.toMatchObject({ code: 'SANDBOX_CLOSED' });
  });
});
