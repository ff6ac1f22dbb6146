/**
 * The isolated environment's lifetime: how long it lives past the handle
 * that made it (a dropped sandbox, a command still running in it), and
 * that it ends with this process, killed or exiting, leaving nothing on
 * the host but the root skeleton it keeps for the sandboxes to come.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it, onTestFinished } from 'vitest';
import { captureWarnings } from '@sandstream/test-support/warnings';
import type { Process } from '@sandstream/types';
import { createLocalSandbox } from '../src/index.js';
import { hostStat } from '../src/isolation/environment.js';
import { eventually, isAlive, readUntil, testSandbox } from './helpers.js';

const isolated = () => testSandbox({ isolation: 'namespaces' });

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Collects garbage until `done()` holds or `rounds` rounds have passed, letting finalizers run in between. */
async function collectUntil(done: () => boolean, rounds = 50): Promise<boolean> {
  for (let i = 0; i < rounds && !done(); i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return done();
}

/** An isolated sandbox that ran a command and was then dropped; its init's host pid. Not inlined, so no local keeps it. */
async function abandonedSandbox(): Promise<number> {
  const sb = createLocalSandbox({ isolation: 'namespaces' });
  await sb.run(['true']);
  return sb.native.sandbox!.initPid()!;
}

/** A running command of an isolated sandbox that was dropped, with the sandbox's init pid. */
function droppedSandboxWithCommand(): { proc: Process; init: () => number | undefined } {
  const sb = createLocalSandbox({ isolation: 'namespaces' });
  const info = sb.native.sandbox!;
  return { proc: sb.stream(['sh', '-c', 'echo ready; read line; echo "got $line"'], { stdin: 'pipe' }), init: () => info.initPid() };
}

/**
 * Talks to a command whose sandbox was dropped, across garbage collections:
 * the environment must stay up while the command runs. Returns the init's pid.
 */
async function commandOfDroppedSandbox(): Promise<number> {
  const { proc, init } = droppedSandboxWithCommand();
  const iterator = proc[Symbol.asyncIterator]();
  await readUntil(iterator, (seen) => seen.includes('ready'));
  const pid = init()!;
  // Bounded: what is asserted is that the environment is still there afterwards.
  await collectUntil(() => false, 10);
  expect(isAlive(pid)).toBe(true);
  await proc.stdin!.write('line\n');
  expect(await readUntil(iterator, (seen) => seen.includes('got line'))).toContain('got line');
  await proc.stdin!.end();
  expect((await proc.wait()).exitCode).toBe(0);
  await proc[Symbol.asyncDispose]();
  return pid;
}

describe("isolation: 'namespaces', the environment's lifetime", () => {
  it('an isolated sandbox dropped without close() has its environment destroyed once collected, with a warning', async () => {
    const leaks = captureWarnings(['SANDSTREAM_SANDBOX_LEAKED']);
    try {
      const init = await abandonedSandbox();
      expect(isAlive(init)).toBe(true);
      expect(await collectUntil(() => !isAlive(init))).toBe(true);
      expect(leaks.warnings.length).toBeGreaterThan(0);
    } finally {
      leaks.release();
    }
  });

  it("a running command keeps its dropped sandbox's environment alive; once it is gone too, the environment ends, with a warning", async () => {
    const leaks = captureWarnings(['SANDSTREAM_SANDBOX_LEAKED']);
    try {
      const init = await commandOfDroppedSandbox();
      expect(await collectUntil(() => !isAlive(init))).toBe(true);
      expect(leaks.warnings.length).toBeGreaterThan(0);
    } finally {
      leaks.release();
    }
  });

  it('the environment ends when this process dies without close()', async () => {
    const entry = new URL('../dist/index.js', import.meta.url).href;
    const script = `const { createLocalSandbox } = await import(${JSON.stringify(entry)});
const sb = createLocalSandbox({ isolation: 'namespaces' });
await sb.run(['sh', '-c', 'echo written > /workspace/file; echo written > /tmp/file']);
console.log(sb.native.sandbox.initPid());
// The timer holds the sandbox: dropped, a collection would end its environment (the leak finalizer) before the kill.
setInterval(() => sb, 1000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    onTestFinished(() => void child.kill('SIGKILL'));
    let out = '';
    child.stdout.on('data', (data: Buffer) => (out += String(data)));
    expect(await eventually(() => out.includes('\n'), 30_000), 'the child never reported its sandbox').toBe(true);
    const init = Number(out.trim());
    expect(isAlive(init), `the sandbox's init ${init} is gone before the child was killed`).toBe(true);
    // The init's arguments name the root skeleton it binds, inside the process's host directory.
    const args = readFileSync(`/proc/${init}/cmdline`, 'latin1').split('\0');
    const stateDir = dirname(args[args.indexOf('sandstream-init') + 1]!);
    expect(stateDir.startsWith(tmpdir())).toBe(true);
    // It holds the skeleton (empty mount points and links), the empty file and directory bound over
    // what of /etc is hidden, and the mount table: nothing a command wrote.
    expect(readdirSync(stateDir).sort()).toEqual(['empty-dir', 'empty-file', 'root', expect.stringMatching(/^table-[0-9a-f]+$/)]);
    expect(readdirSync(join(stateDir, 'empty-dir'))).toEqual([]);
    expect(statSync(join(stateDir, 'empty-file')).size).toBe(0);
    const root = join(stateDir, 'root');
    expect(readdirSync(join(root, 'workspace'))).toEqual([]);
    expect(readdirSync(join(root, 'tmp'))).toEqual([]);
    const files = readdirSync(root, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile());
    expect(files.map((entry) => statSync(join(entry.parentPath, entry.name)).size).filter((size) => size > 0)).toEqual([]);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('close', resolve));
    expect(await eventually(() => !isAlive(init), 5_000)).toBe(true);
    // Killed, it ran no exit hook: its janitor removes the directory once the process is gone.
    const removed = await eventually(() => !existsSync(stateDir), 10_000);
    if (!removed) rmSync(stateDir, { recursive: true, force: true });
    expect(removed, `${stateDir} stayed behind the killed process`).toBe(true);
  });

  it('keeps the root skeleton for the sandboxes to come, and leaves nothing behind when this process exits', async () => {
    const entry = new URL('../dist/index.js', import.meta.url).href;
    const script = `import { existsSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
const { createLocalSandbox } = await import(${JSON.stringify(entry)});
const stateDir = (sb) => {
  const args = readFileSync('/proc/' + sb.native.sandbox.initPid() + '/cmdline', 'latin1').split('\\0');
  return dirname(args[args.indexOf('sandstream-init') + 1]);
};
const dirs = [];
for (let i = 0; i < 2; i++) {
  const sb = createLocalSandbox({ isolation: 'namespaces' });
  await sb.run(['true']);
  dirs.push(stateDir(sb));
  await sb.close();
}
console.log(JSON.stringify({ dirs, kept: existsSync(dirs[0]) }));`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (data: Buffer) => (out += String(data)));
    const code = await new Promise((resolve) => child.once('close', resolve));
    expect(code).toBe(0);
    const { dirs, kept } = JSON.parse(out) as { dirs: string[]; kept: boolean };
    // One skeleton for both sandboxes, one after the other, and still there after the last close().
    expect(dirs[1]).toBe(dirs[0]);
    expect(kept).toBe(true);
    const gone = await eventually(() => !existsSync(dirs[0]!), 10_000);
    if (!gone) rmSync(dirs[0]!, { recursive: true, force: true });
    expect(gone, `${dirs[0]} stayed behind the process's exit`).toBe(true);
  });

  it('unshare killed on the host does not end the sandbox', async () => {
    const sb = isolated();
    await sb.run(['true']);
    const init = sb.native.sandbox!.initPid()!;
    const unshare = hostStat(init)!.ppid;
    expect(readFileSync(`/proc/${unshare}/cmdline`, 'latin1')).toContain('unshare');
    // unshare ignores SIGTERM and SIGINT while it waits; SIGKILL is the stray signal that counts.
    process.kill(unshare, 'SIGKILL');
    expect(await eventually(() => !isAlive(unshare), 5_000)).toBe(true);
    expect((await sb.run(['sh', '-c', 'echo still here'])).stdoutText).toBe('still here\n');
    await sb.close();
    expect(isAlive(init)).toBe(false);
  });
});
