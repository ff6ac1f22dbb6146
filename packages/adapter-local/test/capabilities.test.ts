// What the adapter advertises on a machine without prlimit and without root,
// simulated by replacing the two probes.
import { describe, expect, it, vi } from 'vitest';
import { CapabilityNotSupported } from '@sandstream/types';
import { testSandbox } from './helpers.js';

vi.mock('../src/limits.js', async (importOriginal) => ({
  ...(await importOriginal<typeof import('../src/limits.js')>()),
  findPrlimit: () => undefined,
}));
vi.mock('../src/users.js', async (importOriginal) => ({
  ...(await importOriginal<typeof import('../src/users.js')>()),
  canSwitchUser: () => false,
}));

describe('capabilities the machine lacks', () => {
  it('are not advertised', () => {
    const sb = testSandbox();
    expect(sb.capabilities).toEqual({ streaming: true, stdin: true, 'resource-limits': false, user: false, attach: true, 'replay-tail': true, pty: true });
    expect(sb.native.prlimitPath).toBeUndefined();
  });

  it('cannot be turned on by the override', () => {
    const sb = testSandbox({ capabilities: { 'resource-limits': true, user: true } });
    expect(sb.capabilities['resource-limits']).toBe(false);
    expect(sb.capabilities.user).toBe(false);
  });

  it('make the options that need them fail with CapabilityNotSupported', async () => {
    const sb = testSandbox();
    await expect(sb.run(['true'], { limits: { cpuSeconds: 1 } })).rejects.toBeInstanceOf(CapabilityNotSupported);
    await expect(sb.run(['true'], { user: 'nobody' })).rejects.toMatchObject({ capability: 'user' });
    expect(() => sb.stream(['true'], { limits: { openFiles: 8 } })).toThrow(CapabilityNotSupported);
    expect((await sb.run(['true'])).exitCode).toBe(0);
  });
});

describe('the attach capability (spec 1.2)', () => {
  it('turned off, takes the replay it promised with it', () => {
    const sb = testSandbox({ capabilities: { attach: false } });
    expect([sb.capabilities.attach, sb.capabilities['replay-tail']]).toEqual([false, false]);
    expect(() => sb.stream(['true'], { background: true })).toThrow(expect.objectContaining({ capability: 'attach' }));
  });
});
