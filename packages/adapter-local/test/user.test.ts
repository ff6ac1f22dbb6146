import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { InvalidArgument } from '@sandstream/types';
import { unless } from '@sandstream/test-support/skips';
import { findPrlimit } from '../src/limits.js';
import { canSwitchUser, resolveUser } from '../src/users.js';
import { testSandbox } from './helpers.js';

const root = canSwitchUser();
const notRoot = root ? undefined : `switching accounts needs root, and this runs as uid ${process.getuid?.()}`;

describe('resolveUser()', () => {
  it('resolves names and numeric ids through the passwd database', () => {
    expect(resolveUser('root')).toMatchObject({ uid: 0, gid: 0, name: 'root' });
    expect(resolveUser('0')).toMatchObject({ uid: 0, gid: 0, name: 'root' });
    expect(resolveUser('4711', '/nonexistent/passwd')).toEqual({ uid: 4711, gid: 4711 });
  });

  it('rejects an unknown account with InvalidArgument', () => {
    expect(() => resolveUser('sandstream-no-such-user')).toThrow(InvalidArgument);
  });
});

describe('the user capability', () => {
  it('is advertised exactly when running as root', () => {
    expect(testSandbox().capabilities.user).toBe(root);
  });

  unless(it, notRoot)("runs the command as 'nobody'", async () => {
    const sb = testSandbox({ cwd: '/' });
    const nobody = resolveUser('nobody');
    const result = await sb.run(['id', '-u'], { user: 'nobody' });
    expect(result.exitCode).toBe(0);
    expect(result.stdoutText).toBe(`${nobody.uid}\n`);
    const groups = await sb.run(['id', '-G'], { user: 'nobody' });
    // No supplementary groups of ours are kept.
    expect(groups.stdoutText.trim().split(' ')).toEqual([String(nobody.gid)]);
    await using proc = sb.stream(['id', '-un'], { user: 'nobody' });
    let out = '';
    for await (const chunk of proc) out += new TextDecoder().decode(chunk.data);
    expect(out).toBe('nobody\n');
  });

  unless(it, notRoot)("gives the command the account's HOME, USER and LOGNAME unless the call sets them", async () => {
    const sb = testSandbox({ cwd: '/', env: { PATH: process.env['PATH'] ?? '', HOME: '/root', USER: 'root', LOGNAME: 'root' } });
    const nobody = resolveUser('nobody');
    const result = await sb.run(['sh', '-c', 'echo "$HOME $USER $LOGNAME"'], { user: 'nobody' });
    expect(result.stdoutText).toBe(`${nobody.home} nobody nobody\n`);
    const overridden = await sb.run(['sh', '-c', 'echo "$HOME"'], { user: 'nobody', env: { HOME: '/tmp' } });
    expect(overridden.stdoutText).toBe('/tmp\n');
  });

  unless(it, notRoot)('rejects an unknown account before starting anything', async () => {
    const sb = testSandbox();
    await expect(sb.run(['id'], { user: 'sandstream-no-such-user' })).rejects.toBeInstanceOf(InvalidArgument);
    expect(() => sb.stream(['id'], { user: 'sandstream-no-such-user' })).toThrow(InvalidArgument);
  });

  unless(it, notRoot ?? (findPrlimit() === undefined ? 'prlimit was not found' : undefined))('combines with resource limits', async () => {
    const sb = testSandbox({ cwd: '/' });
    expect(sb.capabilities['resource-limits']).toBe(true);
    const result = await sb.run(['sh', '-c', 'id -u; ulimit -n'], { user: 'nobody', limits: { openFiles: 50 } });
    expect(result.stdoutText).toBe(`${resolveUser('nobody').uid}\n50\n`);
  });
});

describe('supplementary groups', () => {
  // An account that is a listed member of some group, so that it has supplementary groups.
  const member = (() => {
    let text = '';
    try {
      text = readFileSync('/etc/group', 'utf8');
    } catch {
      return undefined;
    }
    for (const line of text.split('\n')) {
      const names = (line.split(':')[3] ?? '').split(',').filter((name) => name !== '');
      for (const name of names) {
        try {
          resolveUser(name);
          return name;
        } catch {
          // listed in /etc/group but not in /etc/passwd
        }
      }
    }
    return undefined;
  })();
  const noMember = member === undefined ? 'no account here is a listed member of a group' : undefined;

  unless(it, notRoot ?? noMember)('a command run as an account keeps the account\'s supplementary groups', async () => {
    const sb = testSandbox({ cwd: '/' });
    const expected = (await sb.run(['id', '-G', member!])).stdoutText.trim().split(' ').sort();
    expect(expected.length).toBeGreaterThan(1);
    const result = await sb.run(['id', '-G'], { user: member! });
    expect(result.stdoutText.trim().split(' ').sort()).toEqual(expected);
  });
});

