// What README.md says of @ai-sdk/sandbox-just-bash beside the kit's verdict, shown on it directly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJustBashSandbox } from '@ai-sdk/sandbox-just-bash';
import { fromSandboxSession } from '../src/index.js';

type Network = Awaited<ReturnType<ReturnType<typeof createJustBashSandbox>['createSession']>>;
let network: Network;
let session: ReturnType<Network['restricted']>;

beforeAll(async () => {
  network = await createJustBashSandbox().createSession();
  session = network.restricted();
});

afterAll(async () => {
  await network.stop();
});

describe('@ai-sdk/sandbox-just-bash', () => {
  it('runs commands through fromSandboxSession: output, exit codes, env and cwd', async () => {
    const sandbox = fromSandboxSession(session, { stdin: false });
    try {
      const result = await sandbox.run(['sh', '-c', 'echo "$1 $V"; pwd; echo e >&2; exit 255', 'sh', "it's"], { env: { V: 'v' }, cwd: '/tmp' });
      expect({ exitCode: result.exitCode, stdout: result.stdoutText, stderr: result.stderrText }).toEqual({ exitCode: 255, stdout: "it's v\n/tmp\n", stderr: 'e\n' });
      await expect(sandbox.run(['no-such-binary'])).rejects.toMatchObject({ code: 'SPAWN_FAILED' });
    } finally {
      await sandbox.close();
    }
  });

  it('resolves spawn({ stdin: true }) with no stdin stream, where the interface says to reject', async () => {
    const options: Parameters<typeof session.spawn>[0] & { stdin: boolean } = { command: 'cat', stdin: true };
    const proc = await session.spawn(options);
    try {
      expect('stdin' in proc).toBe(false);
    } finally {
      await proc.kill();
    }
  });

  it('reports exit code 0 for a process it killed at a timeout', async () => {
    const sandbox = fromSandboxSession(session, { stdin: false });
    try {
      const result = await sandbox.run(['sleep', '30'], { timeout: 300 });
      expect(result).toMatchObject({ timedOut: true, exitCode: 0, signal: null });
    } finally {
      await sandbox.close();
    }
  });

  it('has no trap, no /proc, and $$ is 1', async () => {
    const { stdout } = await session.run({ command: 'echo "$$"; trap "" TERM 2>/dev/null; echo "trap=$?"; test -e /proc/self/stat; echo "proc=$?"' });
    expect(stdout).toBe('1\ntrap=127\nproc=1\n');
  });

  it('runs a script added to PATH, which `command -v` (the kit\'s tool check) does not find', async () => {
    await session.writeTextFile({ path: '/usr/bin/mktemp', content: '#!/bin/sh\necho /tmp/made\n' });
    const { stdout } = await session.run({ command: 'chmod +x /usr/bin/mktemp; mktemp; command -v mktemp; echo "found=$?"' });
    expect(stdout).toBe('/tmp/made\nfound=1\n');
  });
});
