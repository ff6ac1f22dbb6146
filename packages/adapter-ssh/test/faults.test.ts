/**
 * What goes wrong over SSH, against a real sshd: the connection cut under a
 * running command (its serving sshd process killed), sshd restarted, a key
 * the server refuses, a host key nobody vouched for, a port nobody serves,
 * a start larger than an exec request may be, and a server that talks
 * before the command does.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TAG_VARIABLE } from '@sandstream/remote';
import { unless } from '@sandstream/test-support/skips';
import { afterAll, describe, expect, it } from 'vitest';
import { createSshSandbox, cutConnections, HostKeyMismatch, HostKeyUnknown, SshAuthFailed, SshUnreachable } from '../src/index.js';
import { SKIP, useServer } from './server.js';

const scratch = mkdtempSync(join(tmpdir(), 'ss-ssh-faults-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Whether a process whose argv or environment names `id` runs on this machine (the server is local). */
function processesNaming(id: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const said = readFileSync(`/proc/${entry}/cmdline`, 'latin1') + readFileSync(`/proc/${entry}/environ`, 'latin1');
      if (said.includes(id)) found.push(Number(entry));
    } catch {
      // Gone, or not ours to read.
    }
  }
  return found;
}

/** The remote kit's tag of a command's process: the variable every process of its tree carries. */
function tagOf(pid: number): string {
  const tag = readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').find((entry) => entry.startsWith(`${TAG_VARIABLE}=`));
  expect(tag, `process ${pid} carries ${TAG_VARIABLE}`).toBeDefined();
  return tag!.slice(TAG_VARIABLE.length + 1);
}

/** Polls `check` every 50 ms until it holds or `ms` passed; whether it held. */
async function within(ms: number, check: () => boolean): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The pids a command wrote, one per line, once there are `count`. */
async function pidsIn(file: string, count: number): Promise<number[]> {
  let pids: number[] = [];
  const ok = await within(20_000, () => {
    try {
      pids = readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number);
    } catch {
      return false;
    }
    return pids.length >= count;
  });
  expect(ok, `the command wrote its pids to ${file}`).toBe(true);
  return pids;
}

/** Whether `pid` runs: a zombie waiting for its reaper (init may take a second) has ended. */
const alive = (pid: number): boolean => {
  try {
    return !/^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

unless(describe, SKIP)('adapter-ssh: faults against a real sshd', () => {
  const file = useServer();

  it('a connection cut mid-command (its sshd process killed) leaves nothing running on the server after the stated bound', async () => {
    const sb = await createSshSandbox(file.options());
    const bound = sb.termination!.ownerLossMs!;
    expect(bound).toBeLessThanOrEqual(10_000);
    const pids = join(scratch, 'cut.pids');
    const proc = sb.stream(['sh', '-c', 'echo $$ > "$1"; sleep 300 & echo $! >> "$1"; wait', 'sh', pids]);
    await proc.started();
    const [shell, sleeper] = await pidsIn(pids, 2);
    const id = tagOf(shell!);
    // The system responded: the tree and its supervisor run, found by the command's id.
    expect(alive(shell!) && alive(sleeper!)).toBe(true);
    expect(processesNaming(id).length).toBeGreaterThanOrEqual(2);
    const settled = proc.wait().then(
      () => 'result',
      (error: unknown) => error,
    );
    for (const pid of file.server.sessionPids()) process.kill(pid, 'SIGKILL');
    // Spec 1.4: the owner lease ends the tree within the manifest's bound; a second of slack for the poll.
    const gone = await within(bound + 1_000, () => !alive(shell!) && !alive(sleeper!) && processesNaming(id).length === 0);
    expect(gone, `processes naming ${id} after ${bound + 1_000} ms: ${processesNaming(id).join(', ')}`).toBe(true);
    const outcome = await settled;
    expect(outcome).not.toBe('result');
    expect((outcome as { code?: string }).code).toBe('TRANSPORT');
    await sb.close();
  }, 60_000);

  it('a connection cut on this side (the socket destroyed) ends the tree too, and the handle connects again for the next command', async () => {
    const sb = await createSshSandbox(file.options());
    const bound = sb.termination!.ownerLossMs!;
    const pids = join(scratch, 'local-cut.pids');
    const proc = sb.stream(['sh', '-c', 'echo $$ > "$1"; exec sleep 300', 'sh', pids]);
    await proc.started();
    const [shell] = await pidsIn(pids, 1);
    const id = tagOf(shell!);
    expect(processesNaming(id).length).toBeGreaterThanOrEqual(1);
    expect(cutConnections(sb)).toBeGreaterThanOrEqual(1);
    await expect(proc.wait()).rejects.toMatchObject({ code: 'TRANSPORT' });
    expect(await within(bound + 1_000, () => !alive(shell!) && processesNaming(id).length === 0)).toBe(true);
    expect((await sb.run(['echo', 'again'])).stdoutText).toBe('again\n');
    await sb.close();
  }, 60_000);

  it('sshd restarted: a running command finishes over its connection, and new sandboxes reach the new listener', async () => {
    const sb = await createSshSandbox(file.options());
    const gate = join(scratch, 'restart.gate');
    const proc = sb.stream(['sh', '-c', 'while [ ! -e "$1" ]; do sleep 0.05; done; echo finished; exit 7', 'sh', gate]);
    await proc.started();
    let printed = '';
    const reading = (async () => {
      for await (const chunk of proc) printed += new TextDecoder().decode(chunk.data);
    })();
    const before = file.server.pid;
    await file.server.restart();
    expect(file.server.pid).not.toBe(before);
    writeFileSync(gate, '');
    const result = await proc.wait();
    await reading;
    expect([result.exitCode, printed]).toEqual([7, 'finished\n']);
    const fresh = await createSshSandbox(file.options());
    expect((await fresh.run(['echo', 'new'])).stdoutText).toBe('new\n');
    await Promise.all([sb.close(), fresh.close()]);
  }, 60_000);

  it('a key the server does not accept is SshAuthFailed, before any command', async () => {
    const key = join(scratch, 'stranger');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', key]);
    const error = await createSshSandbox({ ...file.options(), privateKeyPath: key }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SshAuthFailed);
    expect(error).toMatchObject({ code: 'TRANSPORT', username: 'root' });
    const nobody = await createSshSandbox({ ...file.options(), username: 'no-such-account' }).catch((caught: unknown) => caught);
    expect(nobody).toBeInstanceOf(SshAuthFailed);
  }, 30_000);

  it('a host key in no known_hosts entry is HostKeyUnknown; another key, or another pinned fingerprint, is HostKeyMismatch', async () => {
    const empty = join(scratch, 'known_hosts.empty');
    writeFileSync(empty, '');
    const unknown = await createSshSandbox({ ...file.options(), knownHostsPath: empty }).catch((caught: unknown) => caught);
    expect(unknown).toBeInstanceOf(HostKeyUnknown);
    expect((unknown as HostKeyUnknown).fingerprint).toBe(file.server.fingerprint);
    const other = join(scratch, 'other-host');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', other]);
    const wrong = join(scratch, 'known_hosts.wrong');
    writeFileSync(wrong, `[127.0.0.1]:${file.server.port} ${readFileSync(`${other}.pub`, 'utf8').split(' ').slice(0, 2).join(' ')}\n`);
    await expect(createSshSandbox({ ...file.options(), knownHostsPath: wrong })).rejects.toBeInstanceOf(HostKeyMismatch);
    const fingerprint = execFileSync('ssh-keygen', ['-lf', `${other}.pub`], { encoding: 'utf8' }).split(' ')[1]!;
    await expect(createSshSandbox({ ...file.options(), hostFingerprint: fingerprint })).rejects.toBeInstanceOf(HostKeyMismatch);
    // The right pin needs no known_hosts at all.
    const pinned = await createSshSandbox({ ...file.options(), knownHostsPath: empty, hostFingerprint: file.server.fingerprint });
    expect((await pinned.run(['echo', 'pinned'])).stdoutText).toBe('pinned\n');
    await pinned.close();
  }, 30_000);

  it('a port nobody serves is SshUnreachable', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as { port: number };
        probe.close(() => resolve(free));
      });
    });
    await expect(createSshSandbox({ ...file.options(), port })).rejects.toBeInstanceOf(SshUnreachable);
  });

  it('a start larger than an exec request may be goes through standard input, exact, and the command still gets its own input', async () => {
    const sb = await createSshSandbox(file.options());
    // OpenSSH drops the connection on an exec request over 256 KiB; Linux takes one word of at most 128 KiB.
    const words = Array.from({ length: 4 }, (_, i) => `${i}${'a\nb\'c"$x\\ '.repeat(10_000)}`);
    const result = await sb.run(['sh', '-c', 'printf "%s\\n" "$@" | cksum; cat', 'sh', ...words], { input: 'own input' });
    const expected = execFileSync('cksum', { input: words.map((word) => `${word}\n`).join(''), encoding: 'utf8' });
    expect(result.stdoutText).toBe(`${expected}own input`);
    expect(result.exitCode).toBe(0);
    await sb.close();
  }, 30_000);

  it("what the server prints before the command (the account's ~/.ssh/rc) is not the command's output", async () => {
    const home = file.server.accounts.unprivileged.home;
    mkdirSync(join(home, '.ssh'), { recursive: true });
    writeFileSync(join(home, '.ssh', 'rc'), 'echo noise on stdout; echo noise on stderr >&2\n');
    try {
      const sb = await createSshSandbox(file.options(file.server.accounts.unprivileged));
      const result = await sb.run(['sh', '-c', 'echo out; echo err >&2']);
      expect([result.stdoutText, result.stderrText]).toEqual(['out\n', 'err\n']);
      await sb.close();
    } finally {
      rmSync(join(home, '.ssh'), { recursive: true, force: true });
    }
  }, 30_000);

  it('more commands at once than one connection carries run on more connections (OpenSSH refuses an eleventh session by default)', async () => {
    const sb = await createSshSandbox({ ...file.options(), channelsPerConnection: 3 });
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => sb.run(['sh', '-c', 'sleep 0.3; echo "$1"', 'sh', String(i)])));
    expect(results.map((result) => result.stdoutText)).toEqual(Array.from({ length: 12 }, (_, i) => `${i}\n`));
    await sb.close();
  }, 30_000);
});
