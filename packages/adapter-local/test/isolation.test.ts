/**
 * The isolated mode's boundaries, each proven from inside a command, with a
 * control that shows the same check can fail (the plain mode, or the
 * option that opens the boundary).
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { InvalidArgument, SpawnFailed } from '@sandstream/types';
import { isLiveProcess, listPids, readProcArgv } from '@sandstream/types/runtime';
import { unless } from '@sandstream/test-support/skips';
import { attachIsolatedSandbox, IsolationUnavailable, type LocalSandboxOptions } from '../src/index.js';
import { probe } from '../src/isolation/probe.js';
import { eventually, isAlive, nodeScript, readUntil, testSandbox } from './helpers.js';

const isolated = (options: LocalSandboxOptions = {}) => testSandbox({ isolation: 'namespaces', ...options });

/** Live host pids other than this one whose command line contains `token`. */
function hostPidsWith(token: string): number[] {
  return listPids().filter((pid) => pid !== process.pid && isLiveProcess(pid) && (readProcArgv(pid)?.join(' ').includes(token) ?? false));
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

async function hostServer(): Promise<number> {
  const server = createServer((socket) => socket.on('error', () => undefined).end('host\n'));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

/** Connects to 127.0.0.1:port from inside; prints `connected` or the error code. */
const CONNECT = `const s = require('net').connect(Number(process.argv[1]), '127.0.0.1');
s.on('connect', () => { console.log('connected'); s.destroy(); });
s.on('error', (e) => { console.log(e.code); process.exitCode = 3; });`;

describe("isolation: 'namespaces'", () => {
  it('is reported in native, and the default is none', async () => {
    const plain = testSandbox();
    expect(plain.native.isolation).toBe('none');
    expect(plain.native.sandbox).toBeUndefined();
    const sb = isolated();
    expect(sb.native.isolation).toBe('namespaces');
    expect(sb.native.sandbox?.workDir).toBe('/workspace');
    expect(sb.native.sandbox?.network).toBe(false);
    expect((await sb.run(['true'])).exitCode).toBe(0);
    const init = sb.native.sandbox!.initPid();
    expect(init).toBeTypeOf('number');
    expect(readFileSync(`/proc/${init}/cmdline`, 'latin1')).toContain('sandstream-init');
    await sb.close();
    expect(sb.native.sandbox!.initPid()).toBeUndefined();
    expect(isAlive(init!)).toBe(false);
  });

  it('files written by one command are seen by the next one of the same sandbox, in /tmp and the work directory', async () => {
    const sb = isolated();
    const write = await sb.run(['sh', '-c', 'pwd; echo one > /tmp/shared; echo two > file']);
    expect(write.stdoutText).toBe('/workspace\n');
    const read = await sb.run(['sh', '-c', 'cat /tmp/shared /workspace/file']);
    expect(read.stdoutText).toBe('one\ntwo\n');
  });

  it("has no route to a port listening on the host's loopback; with network: true it has", async () => {
    const port = await hostServer();
    const closed = await isolated().run(nodeScript(CONNECT, String(port)));
    expect(closed.stdoutText.trim()).toBe('ECONNREFUSED');
    expect(closed.exitCode).toBe(3);
    // The control: the same command reaches the server when the network is shared.
    const open = await isolated({ network: true }).run(nodeScript(CONNECT, String(port)));
    expect(open.stdoutText.trim()).toBe('connected');
  });

  it('has a working loopback of its own', async () => {
    const script = `const net = require('net');
const server = net.createServer((s) => s.end('inside')).listen(0, '127.0.0.1', () => {
  net.connect(server.address().port, '127.0.0.1').on('data', (d) => { console.log(String(d)); server.close(); });
});`;
    expect((await isolated().run(nodeScript(script))).stdoutText).toBe('inside\n');
  });

  it("the host's system directories are read-only inside, and nothing reaches the host's files", async () => {
    const token = `sandstream-probe-${randomUUID()}`;
    const here = fileURLToPath(new URL('.', import.meta.url));
    const places = ['/', '/etc', '/usr', '/var', here];
    const sb = isolated();
    for (const place of places) {
      const result = await sb.run(['sh', '-c', 'echo x > "$1/$2"', 'sh', place, token]);
      expect(result.exitCode, `writing into ${place}`).not.toBe(0);
      // Only the system directories are there (read-only); /var and this checkout (in a home, under
      // /work, /tmp...) do not exist inside at all.
      const hidden = place === '/var' || (place === here && !['/usr/', '/etc/'].some((dir) => here.startsWith(dir)));
      expect(result.stderrText).toMatch(hidden ? /Directory nonexistent|No such file or directory/ : /Read-only file system/);
      expect(existsSync(join(place, token))).toBe(false);
    }
    // The control: the same write succeeds where the sandbox is writable.
    expect((await sb.run(['sh', '-c', 'echo x > "$1/$2"', 'sh', '/tmp', token])).exitCode).toBe(0);
    expect(existsSync(join('/tmp', token))).toBe(false);
  });

  it("another sandbox's files and processes are invisible", async () => {
    const token = `sandstream-other-${randomUUID()}`;
    const a = isolated();
    const b = isolated();
    await a.run(['sh', '-c', 'echo a > "/tmp/$1"; echo a > "/workspace/$1"', 'sh', token]);
    const loop = a.stream(['sh', '-c', 'echo $$; while :; do sleep 1; done', 'sh', token]);
    const text = await readUntil(loop[Symbol.asyncIterator](), (seen) => seen.includes('\n'));
    // The pattern does not match its own text, so the search does not find itself.
    const pattern = `[${token[0]}]${token.slice(1)}`;
    const find = ['sh', '-c', 'ls /tmp /workspace; grep -l "$1" /proc/[0-9]*/cmdline 2>/dev/null; true', 'sh', pattern];
    // The control: sandbox a sees its own file and its own loop.
    const inA = await a.run(find);
    expect(inA.stdoutText).toContain(token);
    expect(inA.stdoutText).toContain(`/proc/${text.trim()}/cmdline`);
    const inB = await b.run(find);
    expect(inB.stdoutText).not.toContain(token);
    expect(inB.stdoutText).not.toContain('/proc/');
    await loop[Symbol.asyncDispose]();
  });

  it("/proc shows only the sandbox's processes: its init as pid 1, the command, nothing of the host", async () => {
    const sb = isolated();
    const result = await sb.run([
      'sh',
      '-c',
      'echo "self $$"; for d in /proc/[0-9]*; do echo "${d#/proc/} $(tr "\\0\\n" "  " < "$d/cmdline")"; done',
    ]);
    const lines = result.stdoutText.trim().split('\n');
    const self = lines.shift()!.split(' ')[1]!;
    const listed = new Map(lines.map((line) => [line.split(' ')[0]!, line]));
    expect(listed.get('1')).toContain('sandstream-init');
    expect(listed.get(self)).toContain('for d in');
    // Only the init, its idle sleep, and this command's shell and its pipeline.
    expect(listed.size).toBeLessThan(8);
    for (const line of listed.values()) expect(line).not.toContain('vitest');
    // The control: the host's /proc lists this test's process.
    expect(readFileSync(`/proc/${process.pid}/cmdline`, 'latin1')).toContain('vitest');
  });

  it('a setsid daemon is gone once close() resolves; without isolation it outlives close()', async () => {
    const token = `sandstream-daemon-${randomUUID()}`;
    // The daemon leaves the group (setsid) before the command exits, so the
    // command's own teardown cannot reach it; only the sandbox's end can.
    const script =
      'setsid sh -c \'echo $$ > "$0"; while :; do sleep 1; done\' "$2" "$1" </dev/null >/dev/null 2>&1 & ' +
      'while [ ! -s "$2" ]; do sleep 0.01; done; echo started';
    const pidFile = `/tmp/${token}.pid`;
    const start = ['sh', '-c', script, 'sh', token, pidFile];
    const sb = isolated();
    expect((await sb.run(start)).stdoutText).toBe('started\n');
    expect(await eventually(() => hostPidsWith(token).length > 0, 5_000), 'the daemon in the sandbox').toBe(true);
    await sb.close();
    expect(hostPidsWith(token)).toEqual([]);

    // The control: the plain mode can only document that such a daemon survives.
    const plainToken = `${token}-plain`;
    const plain = testSandbox();
    const plainPidFile = join(tmpdir(), `${plainToken}.pid`);
    expect((await plain.run(['sh', '-c', script, 'sh', plainToken, plainPidFile])).stdoutText).toBe('started\n');
    rmSync(plainPidFile, { force: true });
    expect(await eventually(() => hostPidsWith(plainToken).length > 0, 5_000), 'the daemon without isolation').toBe(true);
    await plain.close();
    const survivors = hostPidsWith(plainToken);
    for (const pid of survivors) process.kill(pid, 'SIGKILL');
    expect(survivors.length).toBeGreaterThan(0);
  });

  it('close() ends a running command by SIGTERM first, then the environment', async () => {
    const sb = isolated();
    const proc = sb.stream(['sh', '-c', 'trap "echo term; exit 5" TERM; echo ready; while :; do sleep 0.05; done']);
    await readUntil(proc[Symbol.asyncIterator](), (seen) => seen.includes('ready'));
    await sb.close();
    const result = await proc.wait();
    expect(result.exitCode).toBe(5);
  });

  it('an attached handle runs in the same environment, leaves it alive on its own close(), and fails once the owner closed', async () => {
    const sb = isolated();
    await sb.run(['sh', '-c', 'echo seen > /tmp/mark']);
    const observer = attachIsolatedSandbox(sb);
    expect((await observer.run(['cat', '/tmp/mark'])).stdoutText).toBe('seen\n');
    await observer.close();
    expect((await sb.run(['cat', '/tmp/mark'])).stdoutText).toBe('seen\n');
    const second = attachIsolatedSandbox(sb);
    await sb.close();
    await expect(second.run(['true'])).rejects.toBeInstanceOf(SpawnFailed);
    await second.close();
    expect(() => attachIsolatedSandbox(testSandbox())).toThrow(TypeError);
  });

  it('a missing program or working directory inside the sandbox is SpawnFailed', async () => {
    const sb = isolated();
    await expect(sb.run(['sandstream-no-such-program'])).rejects.toThrow(/no such executable .* in the sandbox/);
    await expect(sb.run(['true'], { cwd: '/no/such/dir' })).rejects.toThrow(/does not exist in the sandbox/);
    // A relative cwd is taken from the work directory.
    await sb.run(['mkdir', 'sub']);
    expect((await sb.run(['pwd'], { cwd: 'sub' })).stdoutText).toBe('/workspace/sub\n');
  });

  it('binds extra host paths read-only by default, read-write on request', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandstream-mount-'));
    try {
      writeFileSync(join(dir, 'in'), 'from the host\n');
      const sb = isolated({
        mounts: [
          { source: dir, target: '/workspace/ro' },
          { source: dir, target: '/workspace/rw', readonly: false },
        ],
      });
      expect((await sb.run(['cat', '/workspace/ro/in'])).stdoutText).toBe('from the host\n');
      const denied = await sb.run(['sh', '-c', 'echo x > /workspace/ro/out']);
      expect(denied.stderrText).toContain('Read-only file system');
      expect((await sb.run(['sh', '-c', 'echo out > /workspace/rw/out'])).exitCode).toBe(0);
      expect(readFileSync(join(dir, 'out'), 'utf8')).toBe('out\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rejects isolation options it cannot honour, before anything starts', () => {
    expect(() => testSandbox({ network: true })).toThrow(InvalidArgument);
    expect(() => testSandbox({ mounts: [] })).toThrow(InvalidArgument);
    expect(() => isolated({ isolation: 'vm' as 'none' })).toThrow(InvalidArgument);
    expect(() => isolated({ mounts: [{ source: 'relative' }] })).toThrow(/options.mounts\[0\].source/);
    expect(() => isolated({ mounts: [{ source: '/sandstream/no/such/path' }] })).toThrow(/does not exist/);
    expect(() => isolated({ mounts: [{ source: '/etc', target: '/proc/x' }] })).toThrow(/options.mounts\[0\].target/);
    expect(() => isolated({ network: 'yes' as unknown as boolean })).toThrow(/options.network/);
  });

  it('names what is missing when the machine cannot isolate, instead of falling back', () => {
    const unavailable = probe(() => undefined);
    expect(unavailable).toBeInstanceOf(IsolationUnavailable);
    const error = unavailable as IsolationUnavailable;
    expect(error.code).toBe('ISOLATION_UNAVAILABLE');
    expect(error.missing.join(' ')).toContain('`unshare`');
    expect(error.message).toContain('`nsenter`');
  });

  const asNobody = (...argv: string[]): boolean =>
    spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', '--', ...argv]).status === 0;
  // The account must be able to create a user namespace and to read this
  // checkout (one under a private home directory is not readable by it).
  const unprivilegedBlocker =
    process.getuid?.() !== 0
      ? 'the test switches to an ordinary account, which needs root'
      : !asNobody('unshare', '--user', '--map-root-user', 'true')
        ? 'unprivileged user namespaces are disabled on this machine'
        : !asNobody('test', '-r', fileURLToPath(new URL('../dist/index.js', import.meta.url)))
          ? 'the account nobody cannot read this checkout'
          : undefined;
  unless(it, unprivilegedBlocker)('works as an ordinary user through a user namespace, with "user" off', async () => {
    const entry = new URL('../dist/index.js', import.meta.url).href;
    const script = `const { createLocalSandbox } = await import(${JSON.stringify(entry)});
const sb = createLocalSandbox({ isolation: 'namespaces' });
const r = await sb.run(['sh', '-c', 'echo x > /workspace/f && cat /workspace/f; touch /usr/sandstream-x; ls /proc | grep -c "^[0-9]"']);
console.log(JSON.stringify({ via: sb.native.sandbox.via, user: sb.capabilities.user, out: r.stdoutText, err: r.stderrText }));
await sb.close();`;
    const child = spawn('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', '--', process.execPath, '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, HOME: '/' },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (data: Buffer) => (out += String(data)));
    child.stderr.on('data', (data: Buffer) => (err += String(data)));
    const code = await new Promise((resolve) => child.once('close', resolve));
    expect(code, err).toBe(0);
    const report = JSON.parse(out) as { via: string; user: boolean; out: string; err: string };
    expect(report.via).toBe('user-namespace');
    expect(report.user).toBe(false);
    expect(report.out.split('\n')[0]).toBe('x');
    expect(report.err).toContain('Read-only file system');
  });
});
