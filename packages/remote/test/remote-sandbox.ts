// A Sandbox of the shared runtime over the remote driver and the local transport, as an adapter
// would build one; every one a test makes is closed, and what it tagged killed, after the test.
import { afterEach } from 'vitest';
import type { Sandbox } from '@sandstream/types';
import { defineSandbox } from '@sandstream/types/runtime';
import { killEach, markedProcesses } from '@sandstream/test-support/processes';
import { DEFAULT_PATHS, DEFAULT_RETRY, RemoteCommands, TAG_VARIABLE, type RemoteTransport } from '../src/index.js';
import { localTransport, type LocalTransportOptions } from './local-transport.js';

const open: Array<{ sandbox: Sandbox; commands: RemoteCommands }> = [];

afterEach(async () => {
  for (const { sandbox, commands } of open.splice(0)) {
    try {
      await sandbox.close();
    } finally {
      // Also when close() failed, which a failing test may cause: nothing it started outlives it.
      killEach(markedProcesses(TAG_VARIABLE, `${commands.prefix}-`, { prefix: true }));
    }
  }
});

/** What a test may change of the handle. */
export interface RemoteSandboxOptions {
  readonly graceMs?: number;
  readonly helperChannel?: boolean;
  readonly lateSweepMs?: number;
  /** Background commands (spec 1.2) with their records under this base. */
  readonly recordBase?: string;
}

export function remoteSandbox(options: LocalTransportOptions = {}, { graceMs = 2_000, helperChannel = false, lateSweepMs, recordBase }: RemoteSandboxOptions = {}) {
  const transport = localTransport(options);
  const commands = new RemoteCommands({
    helperChannel,
    lateSweepMs,
    transport: transport as RemoteTransport,
    env: { BASE: 'base' },
    cwd: undefined,
    paths: { ...DEFAULT_PATHS, shell: '/bin/sh' },
    requestTimeoutMs: 10_000,
    retry: { ...DEFAULT_RETRY, baseMs: 5 },
    recordBase,
  });
  const background = recordBase === undefined ? {} : ({ attach: true, 'attach-reconnect': true, 'replay-full': true } as const);
  const sb = defineSandbox({
    name: 'remote-local',
    capabilities: { streaming: true, stdin: true, 'resource-limits': true, user: false, ...background, ...(options.pty === true ? { pty: true } : {}) },
    native: undefined,
    graceMs,
    ...(recordBase !== undefined && { background: commands.background }),
    createDriver: (command) => commands.createDriver(command),
    close: () => commands.sweep(),
  });
  open.push({ sandbox: sb, commands });
  return { sb, transport, commands };
}
