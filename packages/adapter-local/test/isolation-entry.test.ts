/**
 * How a command enters an isolated sandbox: a first command waits for the
 * sandbox's start, and fails with it, and runs nothing before the host's
 * old root is gone; the entry's shell sets the command's variables again
 * before it execs.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SpawnFailed } from '@sandstream/types';
import type { LocalSandboxOptions } from '../src/index.js';
import { testSandbox } from './helpers.js';

const isolated = (options: LocalSandboxOptions = {}) => testSandbox({ isolation: 'namespaces', ...options });

describe("isolation: 'namespaces', the entry of commands", () => {
  it("a command's environment arrives as given, the variables the entry's shell resets or uses itself included", async () => {
    const envOf = async (sb: ReturnType<typeof isolated>, env: Record<string, string>): Promise<string[]> =>
      (await sb.run(['env', '-0'], { env })).stdoutText.split('\0').filter((entry) => entry !== '' && !/^(HOME|TMPDIR|PWD)=/.test(entry)).sort();
    const sb = isolated();
    const plain = testSandbox();
    // Set again by the shell's own export, then by env(1): a name that is not an identifier, and the export loop's counter.
    const reset = { IFS: 'x', OLDPWD: '/old', OPTIND: '4', SHLVL: '9', _: 'underscore', cwd: 'c', mode: 'm', ENV: 'e', VALUE: 'a b\nc $x `y` \\z' };
    // LC_ALL: the entry runs with LC_ALL=C of its own, which the command has only when it was given it.
    for (const env of [reset, { ...reset, 'NOT-AN-IDENTIFIER': '1' }, { ...reset, count: '3' }, { ...reset, LC_ALL: 'POSIX' }, { ...reset, LC_ALL: 'C', 'NOT-AN-IDENTIFIER': '1' }]) {
      const inside = await envOf(sb, env);
      expect(inside).toEqual(await envOf(plain, env));
      expect(inside).toContain('OLDPWD=/old');
    }
    // Exactly the command's own: with a small base, nothing of the entry's (its PATH, LC_ALL, the
    // OLDPWD of its cd) comes along, and a program is found in the command's own PATH; a
    // sandbox's first command and the next ones.
    const small = { env: { PATH: '/usr/bin:/bin', A: 'a' } };
    const [smallInside, smallPlain] = [isolated(small), testSandbox(small)];
    const own = async (box: ReturnType<typeof isolated>, env: Record<string, string> = {}): Promise<string[]> =>
      (await box.run(['env', '-0'], { env })).stdoutText.split('\0').filter((entry) => entry !== '' && !/^(HOME|TMPDIR|PWD)=/.test(entry)).sort();
    const first = own(smallInside);
    const plainOwn = await own(smallPlain);
    expect(plainOwn).toEqual(expect.arrayContaining(['A=a', 'PATH=/usr/bin:/bin']));
    expect(plainOwn.filter((entry) => /^(OLDPWD|LC_ALL)=/.test(entry))).toEqual([]);
    expect(await first).toEqual(plainOwn);
    expect(await own(smallInside)).toEqual(plainOwn);
    expect(await own(smallInside, { PATH: '/nowhere' }).catch((error: Error) => error.message)).toMatch(/no such executable "env"/);
    expect(await own(smallInside, { B: 'b' })).toEqual(await own(smallPlain, { B: 'b' }));
  });

  it("a sandbox's first commands enter while its old root is unmounted, and see nothing of it", async () => {
    // The init pivots the host's root onto the sandbox's /tmp and unmounts it from there; commands
    // enter meanwhile and wait for their go until it is gone. The control: the host has a /usr,
    // which /tmp/usr would show were the host's root still there.
    expect(existsSync('/usr')).toBe(true);
    for (let i = 0; i < 4; i++) {
      const sb = isolated();
      // Its /tmp empty, and no mount point below it.
      const listing = sb.run(['sh', '-c', 'ls -A /tmp; awk \'$5 ~ "^/tmp/"\' /proc/self/mountinfo']);
      const inside = sb.run(['true'], { cwd: '/tmp/usr' }).catch((caught: unknown) => caught);
      expect((await listing).stdoutText).toBe('');
      expect(await inside).toBeInstanceOf(SpawnFailed);
      expect(((await inside) as Error).message).toMatch(/"\/tmp\/usr" does not exist in the sandbox/);
      await sb.close();
    }
  });

  it("a sandbox's first command and the commands after it hold no descriptor of the sandbox's", async () => {
    const fds = async (sb: ReturnType<typeof isolated>, script = ''): Promise<string[]> =>
      (await sb.run(['sh', '-c', `${script}ls /proc/$$/fd`])).stdoutText.split('\n').filter(Boolean).sort();
    const sb = isolated();
    // Created in the same synchronous run as the sandbox: it waits for the sandbox's start.
    const first = fds(sb);
    // A plain command's: standard input, output and error, and what this process itself inherited.
    const plain = await fds(testSandbox());
    expect(plain).toEqual(expect.arrayContaining(['0', '1', '2']));
    expect(await first).toEqual(plain);
    expect(await fds(sb)).toEqual(plain);
    // The control: a descriptor the command opens itself is listed.
    expect(await fds(sb, 'exec 7</dev/null; ')).toContain('7');
  });

  it("a command waiting for its sandbox's start gets SpawnFailed when the start fails, and leaves nothing behind", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandstream-mount-'));
    try {
      // A mount point that cannot be made: the host's /usr is read-only inside.
      const sb = isolated({ mounts: [{ source: dir, target: '/usr/sandstream-no-such-dir' }] });
      const error = await sb.run(['true']).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(SpawnFailed);
      expect((error as Error).message).toMatch(/environment did not start: .*Read-only file system/);
      await expect(sb.run(['true'])).rejects.toBeInstanceOf(SpawnFailed);
      await sb.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
