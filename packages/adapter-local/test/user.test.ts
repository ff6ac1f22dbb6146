import { describe, expect, it } from 'vitest';
import { InvalidArgument } from '@sandstream/types';
import { canSwitchUser, resolveUser } from '../src/users.js';
import { testSandbox } from './helpers.js';

const root = canSwitchUser();
if (!root) console.log('user-capability tests skipped: they need root (running as uid %d)', process.getuid?.());

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

  it.skipIf(!root)("runs the command as 'nobody'", async () => {
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

  it.skipIf(!root)("gives the command the account's HOME, USER and LOGNAME unless the call sets them", async () => {
    const sb = testSandbox({ cwd: '/', env: { PATH: process.env['PATH'] ?? '', HOME: '/root', USER: 'root', LOGNAME: 'root' } });
    const nobody = resolveUser('nobody');
    const result = await sb.run(['sh', '-c', 'echo "$HOME $USER $LOGNAME"'], { user: 'nobody' });
    expect(result.stdoutText).toBe(`${nobody.home} nobody nobody\n`);
    const overridden = await sb.run(['sh', '-c', 'echo "$HOME"'], { user: 'nobody', env: { HOME: '/tmp' } });
    expect(overridden.stdoutText).toBe('/tmp\n');
  });

  it.skipIf(!root)('rejects an unknown account before starting anything', async () => {
    const sb = testSandbox();
    await expect(sb.run(['id'], { user: 'sandstream-no-such-user' })).rejects.toBeInstanceOf(InvalidArgument);
    expect(() => sb.stream(['id'], { user: 'sandstream-no-such-user' })).toThrow(InvalidArgument);
  });

  it.skipIf(!root)('combines with resource limits', async () => {
    const sb = testSandbox({ cwd: '/' });
    if (!sb.capabilities['resource-limits']) return;
    const result = await sb.run(['sh', '-c', 'id -u; ulimit -n'], { user: 'nobody', limits: { openFiles: 50 } });
    expect(result.stdoutText).toBe(`${resolveUser('nobody').uid}\n50\n`);
  });
});
