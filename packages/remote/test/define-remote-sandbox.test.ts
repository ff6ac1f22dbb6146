// defineRemoteSandbox: an exec-style adapter as a transport. The options' checks come before the
// transport is built, the bound of owner loss is stated, commands run through the supervisor,
// and close() sweeps what this handle's commands left before it releases what the adapter owns.
import { describe, expect, it } from 'vitest';
import { InvalidArgument } from '@sandstream/types';
import { DEFAULT_GRACE_MS } from '@sandstream/types/runtime';
import { checkRemoteOptions, DEFAULT_OWNER_LEASE, defineRemoteSandbox, ownerLossMs, REMOTE_OPTION_KEYS } from '../src/index.js';
import { localTransport } from './local-transport.js';

const CAPABILITIES = { streaming: true, stdin: true, 'resource-limits': true, user: false } as const;

describe('defineRemoteSandbox', () => {
  it('runs a command through the supervisor, states its termination with the owner-loss bound, and releases after the sweep', async () => {
    const transport = localTransport();
    const events: string[] = [];
    const sandbox = defineRemoteSandbox({
      name: 'local-transport',
      capabilities: CAPABILITIES,
      native: 'handle',
      options: { graceMs: 700, env: { BASE: 'base' }, capabilities: { 'resource-limits': false } },
      transport: (settings) => {
        events.push(`transport ${settings.shell} ${settings.requestTimeoutMs}`);
        return transport;
      },
      release: async () => {
        // The sweep is a helper: it ran before this.
        events.push(`release after ${transport.counted.helpers.length} helper(s)`);
      },
    });
    expect(sandbox.native).toBe('handle');
    expect(sandbox.capabilities['resource-limits']).toBe(false);
    expect(sandbox.termination).toEqual({ graceMs: 700, killWaitMs: 5_000, ownerLossMs: ownerLossMs(DEFAULT_OWNER_LEASE, 700) });
    const result = await sandbox.run(['sh', '-c', 'echo "$BASE"']);
    expect(result.stdoutText).toBe('base\n');
    expect(transport.counted.starts.length).toBe(1);
    await sandbox.close();
    expect(events[0]).toBe('transport /bin/sh 15000');
    expect(events[1]).toMatch(/^release after [1-9][0-9]* helper\(s\)$/);
  });

  it('refuses a malformed option with InvalidArgument naming it, before the transport is built', () => {
    let built = false;
    for (const options of [{ graceMs: -1 }, { killWaitMs: 'soon' }, { requestTimeoutMs: Number.NaN }, { capabilities: { streaming: 'yes' } }, { recordBase: 'relative/' }]) {
      const define = (): unknown =>
        defineRemoteSandbox({
          name: 'x',
          capabilities: CAPABILITIES,
          native: undefined,
          options: options as never,
          transport: () => {
            built = true;
            return localTransport();
          },
        });
      expect(define).toThrow(InvalidArgument);
      expect(() => checkRemoteOptions(options as never, CAPABILITIES)).toThrow(InvalidArgument);
    }
    expect(built).toBe(false);
  });

  it('names every option of its vocabulary, and the defaults are the runtime\'s', () => {
    expect([...REMOTE_OPTION_KEYS].sort()).toEqual(['capabilities', 'cwd', 'env', 'envPath', 'graceMs', 'killWaitMs', 'prlimitPath', 'recordBase', 'requestTimeoutMs', 'scriptPath', 'shellPath', 'user']);
    const sandbox = defineRemoteSandbox({ name: 'x', capabilities: CAPABILITIES, native: undefined, options: {}, transport: () => localTransport() });
    expect(sandbox.termination?.graceMs).toBe(DEFAULT_GRACE_MS);
  });
});
