// The session shell's wrapper (src/shell.ts) run directly in each sh this machine has (dash,
// bash in POSIX mode as `sh` is on Fedora-like images, bash, busybox's ash as in a busybox
// image): the MCP tests run the sandbox's /bin/sh only, and the shells differ where it matters
// (export -p's format, bash's read-only variables, bash's EXIT trap on a fatal signal).
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { unless } from '@sandstream/test-support/skips';
import { shellArgv } from '../src/shell.js';

const dir = mkdtempSync(join(tmpdir(), 'sandstream-shell-wrapper-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const has = (program: string): boolean => spawnSync(program, ['-c', 'true']).status === 0;
const SHELLS: [string, string[], string | undefined][] = [
  ['dash', ['dash'], has('dash') ? undefined : 'no dash here'],
  ['bash --posix', ['bash', '--posix'], has('bash') ? undefined : 'no bash here'],
  ['bash', ['bash'], has('bash') ? undefined : 'no bash here'],
  ['busybox sh', ['busybox', 'sh'], spawnSync('busybox', ['sh', '-c', 'true']).status === 0 ? undefined : 'no busybox here'],
];

let tokens = 0;

for (const [name, shell, skip] of SHELLS) {
  describe(`the wrapper in ${name}`, () => {
    const token = `t${++tokens}`;
    /** One call: the wrapper's argv with `sh` replaced by this shell, in `dir`, with TMPDIR at `tmp`. */
    const run = (script: string, { mode = 'restore' as 'restore' | 'reset', tmp = dir } = {}) => {
      const [, ...rest] = shellArgv(token, mode, script);
      const result = spawnSync(shell[0]!, [...shell.slice(1), ...rest], { cwd: dir, env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', TMPDIR: tmp }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      return { status: result.status, signal: result.signal, stdout: result.stdout, stderr: result.stderr };
    };

    unless(it, skip)('keeps cd, export (quotes and newlines in a value), OLDPWD; exit N and set -e keep N and save; reset forgets', () => {
      expect(run(`mkdir -p sub && cd sub && export V="a 'b' \\"c\\"
d" && exit 3`).status).toBe(3);
      expect(run('pwd; printf "%s|" "$V"; set -e; export W=1; false')).toMatchObject({ status: 1, stdout: `${dir}/sub\na 'b' "c"\nd|` });
      expect(run('cd -; echo "$W"')).toMatchObject({ status: 0, stdout: `${dir}\n1\n` });
      expect(run('pwd; echo "${W-unset}"', { mode: 'reset' })).toMatchObject({ status: 0, stdout: `${dir}\nunset\n` });
    });

    unless(it, skip)("bash's read-only variables exported by a call do not break the next one", () => {
      run('export SHELLOPTS BASHOPTS UID EUID PPID 2>/dev/null; export R=1', { mode: 'reset' });
      expect(run('echo "$R"')).toMatchObject({ status: 0, stdout: '1\n', stderr: '' });
    });

    unless(it, skip)('a failed save (no temporary directory) keeps the status and says why on stderr', () => {
      const failed = run('echo hi; exit 6', { tmp: join(dir, 'missing') });
      expect(failed).toMatchObject({ status: 6, stdout: 'hi\n' });
      expect(failed.stderr).toContain('.sandstream-shell-');
    });

    unless(it, skip)('a state directory that is a symbolic link (made by someone else) is neither sourced nor written through', () => {
      const planted = join(dir, `planted-${token}`);
      mkdirSync(planted);
      writeFileSync(join(planted, 'state'), 'export EVIL=1\n');
      symlinkSync(planted, join(dir, `.sandstream-shell-${token}-link`));
      const [, ...rest] = shellArgv(`${token}-link`, 'restore', 'echo "${EVIL-unset}"; export MINE=1; exit 4');
      const result = spawnSync(shell[0]!, [...shell.slice(1), ...rest], { cwd: dir, env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', TMPDIR: dir }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      expect(result).toMatchObject({ status: 4, stdout: 'unset\n' });
      expect(result.stderr).toContain('the state was not saved');
      expect(spawnSync('cat', [join(planted, 'state')], { encoding: 'utf8' }).stdout).toBe('export EVIL=1\n');
    });

    unless(it, skip)('SIGTERM saves nothing: the shell dies of the signal', async () => {
      run('export K=before', { mode: 'reset' });
      const [, ...rest] = shellArgv(token, 'restore', 'export K=after; sleep 30 & echo up; wait');
      const child = spawn(shell[0]!, [...shell.slice(1), ...rest], { cwd: dir, env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', TMPDIR: dir }, detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
      await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
      const exit = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
      // The group, as a sandbox ends a tree.
      process.kill(-child.pid!, 'SIGTERM');
      expect(await exit).toBe('SIGTERM');
      expect(run('echo "$K"').stdout).toBe('before\n');
    });
  });
}
