/**
 * What of the host's secrets an isolated command can reach: none. Secrets
 * are planted where a host keeps them (a variable of this process's
 * environment; a file in the home of the account running the tests, in
 * /root, in another account's `~/.ssh`, in the host's /tmp; a unix socket
 * under /run), each read first by a plain sandbox (the control: the check
 * can fail), then by an isolated one, which must see none of them. And no
 * value of a command's environment is on any process's command line at any
 * point of an isolated sandbox's life: a scanner reads every
 * `/proc/<pid>/cmdline` of the host while sandboxes start, run commands in
 * both of the entry's ways of setting variables, and close.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '@sandstream/types';
import { unless } from '@sandstream/test-support/skips';
import { createLocalSandbox, type LocalNative, type LocalSandboxOptions } from '../src/index.js';
import { probe } from '../src/isolation/probe.js';
import { GRACE_MS, MARKER, NODE, RUN_ID, eventually } from './helpers.js';

const found = probe();
// On CI the tests run (and fail where the machine cannot make the namespaces) instead of skipping.
const blocker = found instanceof Error && process.env['CI'] === undefined ? `isolation is unavailable here: ${found.message}` : undefined;

const SECRET_NAME = 'SANDSTREAM_TEST_SECRET_TOKEN';
const secret = `sk-secret-${randomUUID()}`;
const id = randomUUID().slice(0, 8);

/** Where each secret is planted, by what it stands for. */
const files: Record<string, string> = {
  'a file in the home of the account running the tests': join(homedir(), `.sandstream-secret-${id}`),
  'a file in /root': `/root/.sandstream-secret-root-${id}`,
  "a key in another account's ~/.ssh": `/home/sandstream-other-${id}/.ssh/id_ed25519`,
  "a file in the host's /tmp": join(tmpdir(), `sandstream-secret-${id}`),
};
const socketPath = existsSync('/run') ? `/run/sandstream-secret-${id}.sock` : join(tmpdir(), `sandstream-secret-${id}.sock`);
/** Files and directories made here, removed after. */
const made: string[] = [];
/** The process serving the secret on the socket (a child: this process's descriptors are the leak check's). */
let server: ChildProcess | undefined;
/** The secrets that could be planted here (a test account may not write /root or /home). */
const planted: Record<string, string> = {};

const sandboxes: Sandbox<LocalNative>[] = [];
function sandbox(options: LocalSandboxOptions): Sandbox<LocalNative> {
  // The marker rides in each command's own environment (the helpers' leak check finds what outlives a test).
  const made = createLocalSandbox({ graceMs: GRACE_MS, ...options });
  sandboxes.push(made);
  return made;
}
const marked = { env: { [MARKER]: RUN_ID } };
afterEach(async () => {
  await Promise.all(sandboxes.splice(0).map((made) => made.close()));
});

beforeAll(async () => {
  if (blocker !== undefined) return;
  process.env[SECRET_NAME] = secret;
  for (const [what, path] of Object.entries(files)) {
    try {
      const dir = join(path, '..');
      if (!existsSync(dir)) {
        // The other account's home: made here, removed after.
        const home = path.includes('/.ssh/') ? join(dir, '..') : dir;
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        made.push(home);
      }
      writeFileSync(path, `${secret}\n`, { mode: 0o600 });
      made.push(path);
      planted[what] = path;
    } catch (error) {
      console.log(`[secrets] not planted: ${what} (${path}): ${(error as Error).message}`);
    }
  }
  made.push(socketPath);
  const serve = `require('net').createServer((s) => s.end(process.argv[2])).listen(process.argv[1], () => console.log('listening'));`;
  server = spawn(NODE, ['-e', serve, socketPath, secret], { stdio: ['ignore', 'pipe', 'inherit'] });
  let said = '';
  server.stdout!.on('data', (data: Buffer) => (said += String(data)));
  expect(await eventually(() => said.includes('listening\n') || server!.exitCode !== null, 20_000), 'the socket server did not start').toBe(true);
  server.stdout!.destroy();
});

afterAll(async () => {
  delete process.env[SECRET_NAME];
  if (server !== undefined && server.exitCode === null && server.signalCode === null) {
    server.kill('SIGKILL');
    await new Promise((resolve) => server!.once('close', resolve));
  }
  for (const path of made.reverse()) rmSync(path, { recursive: true, force: true });
});

/** What a command prints of each planted file and of the socket: `<what>: <content or error>` lines. */
const READ_ALL = String.raw`for f do printf '%s: ' "$f"; cat "$f" 2>&1 || :; done; if [ -S "$SOCKET" ]; then echo "socket: present"; else echo "socket: absent"; fi; env`;

describe("isolation: 'namespaces' keeps the host's secrets", () => {
  unless(it, blocker)('a plain sandbox reads every planted secret; an isolated one reads none', async () => {
    // Each of the places the issue names was planted here: as root, all of them.
    if (process.getuid?.() === 0) expect(Object.keys(planted).sort()).toEqual(Object.keys(files).sort());
    const argv = ['sh', '-c', READ_ALL, 'sh', ...Object.values(planted)];
    const env = { ...marked.env, SOCKET: socketPath };
    // The control: the plain mode, with this process's whole environment, reaches each of them.
    const plain = await sandbox({}).run(argv, { env });
    expect(plain.stdoutText.split(secret).length - 1).toBe(Object.keys(planted).length + 1);
    expect(plain.stdoutText).toContain('socket: present');
    const isolated = await sandbox({ isolation: 'namespaces' }).run(argv, { env });
    expect(isolated.exitCode).toBe(0);
    expect(isolated.stdoutText).not.toContain(secret);
    expect(isolated.stdoutText).toContain('socket: absent');
    for (const path of Object.values(planted)) expect(isolated.stdoutText).toContain(`${path}: cat: ${path}: No such file or directory`);
    // No home of the host, nor its /var, /root or the mounts under /mnt.
    const listing = await sandbox({ isolation: 'namespaces' }).run(['sh', '-c', 'ls -A /'], marked);
    expect(listing.stdoutText.split('\n').filter((name) => ['home', 'root', 'var', 'srv', 'mnt', 'opt', 'sys', 'media'].includes(name))).toEqual([]);
  });

  unless(it, blocker)('the environment is the allowlist; hostEnv and env add what they name', async () => {
    const envOf = async (options: LocalSandboxOptions): Promise<string> => (await sandbox(options).run(['env'], marked)).stdoutText;
    // The control: the plain mode's default passes this process's whole environment.
    expect(await envOf({})).toContain(secret);
    const isolated = await envOf({ isolation: 'namespaces' });
    expect(isolated).not.toContain(secret);
    const names = isolated.split('\n').filter((line) => line !== '').map((line) => line.slice(0, line.indexOf('=')));
    for (const name of names) expect(name, name).toMatch(/^(PATH|HOME|TMPDIR|TERM|LANG|LANGUAGE|LC_[A-Z_]+|PWD|SANDSTREAM_TEST_RUN)$/);
    expect(isolated).toContain('HOME=/workspace\n');
    // hostEnv names a variable, in either mode; in the plain mode, giving it narrows the rest to the allowlist.
    expect(await envOf({ isolation: 'namespaces', hostEnv: [SECRET_NAME] })).toContain(`${SECRET_NAME}=${secret}\n`);
    expect(await envOf({ hostEnv: [] })).not.toContain(secret);
    expect(await envOf({ hostEnv: [SECRET_NAME, 'SANDSTREAM_NOT_SET_ANYWHERE'] })).toContain(`${SECRET_NAME}=${secret}\n`);
    expect(await envOf({ isolation: 'namespaces', env: { A: 'a' }, hostEnv: [SECRET_NAME] })).toBe(`A=a\n${SECRET_NAME}=${secret}\n${MARKER}=${RUN_ID}\n`);
    expect(() => createLocalSandbox({ hostEnv: ['A=B'] })).toThrow(/options\.hostEnv\[0\]/);
    expect(() => createLocalSandbox({ hostEnv: 'PATH' as never })).toThrow(/options\.hostEnv/);
  });
});

/** A process that reads every host process's command line over and over, and says when one holds `value`. */
function startScanner(value: string): { child: ChildProcess; scans: () => number; hits: () => string[] } {
  const script = `const fs = require('fs');
const value = process.argv[1].split('').reverse().join('');
let scans = 0;
for (;;) {
  for (const name of fs.readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(name) || Number(name) === process.pid) continue;
    let line;
    try { line = fs.readFileSync('/proc/' + name + '/cmdline', 'latin1'); } catch { continue; }
    if (line.includes(value)) process.stdout.write('hit ' + name + ' ' + JSON.stringify(line.split('\\0').slice(0, 3).map((arg) => arg.slice(0, 60))) + '\\n');
  }
  if (++scans % 10 === 0) process.stdout.write('scans ' + scans + '\\n');
}`;
  // Its own command line holds the value reversed, so that it does not find itself.
  const child = spawn(NODE, ['-e', script, value.split('').reverse().join('')], { stdio: ['ignore', 'pipe', 'inherit'] });
  let scans = 0;
  const hits: string[] = [];
  let text = '';
  child.stdout!.on('data', (data: Buffer) => {
    text += String(data);
    const lines = text.split('\n');
    text = lines.pop()!;
    for (const line of lines) {
      if (line.startsWith('scans ')) scans = Number(line.slice(6));
      else hits.push(line);
    }
  });
  return { child, scans: () => scans, hits: () => [...hits] };
}

describe("isolation: 'namespaces', no value of the environment on a command line", () => {
  unless(it, blocker)('while sandboxes start, run commands (by export and by env -S) and close, no host process carries a value on its argv', async () => {
    const value = `argv-secret-${randomUUID()}`;
    const scanner = startScanner(value);
    try {
      // The control: the scanner responds, and finds the value on a command line that has it.
      const holder = spawn('sh', ['-c', 'read -r _', 'sh', value], { stdio: ['pipe', 'ignore', 'ignore'] });
      expect(await eventually(() => scanner.hits().some((hit) => hit.startsWith(`hit ${holder.pid} `)), 20_000, 5), 'the scanner never saw the control').toBe(true);
      holder.stdin!.end();
      await new Promise((resolve) => holder.once('close', resolve));
      const seen = scanner.hits().length;
      const scansBefore = scanner.scans();
      process.env[SECRET_NAME] = value;
      for (let round = 0; round < 4; round++) {
        const sb = sandbox({ isolation: 'namespaces', hostEnv: [SECRET_NAME] });
        const results = await Promise.all([
          // By the entry shell's export: identifiers only.
          sb.run(['sh', '-c', 'printf %s "$SANDSTREAM_TEST_SECRET_TOKEN$OWN"'], { env: { ...marked.env, OWN: value } }),
          // By env(1) -i -S: names no shell can set.
          sb.run(['sh', '-c', 'tr "\\0" "\\n" </proc/$$/environ'], { env: { ...marked.env, 'not-an-identifier': value, _: value } }),
          sb.run(['true'], { env: { ...marked.env, PATH: `/usr/bin:/bin:/${value}` } }),
          // On a terminal, whose holder sets the variables as the command execs (isolation/terminal.ts).
          sb.run(['sh', '-c', 'printf %s "$SHELL$OWN"'], { pty: { cols: 80, rows: 24 }, env: { ...marked.env, OWN: value, SHELL: `/bin/${value}` } }),
        ]);
        expect(results[0]!.stdoutText).toBe(`${value}${value}`);
        expect(results[1]!.stdoutText).toContain(`not-an-identifier=${value}\n`);
        expect(results[1]!.stdoutText).toContain(`_=${value}\n`);
        expect(results[2]!.exitCode).toBe(0);
        expect(results[3]!.stdoutText).toBe(`/bin/${value}${value}`);
        await sb.close();
      }
      // Absence proven only once the scanner has gone round meanwhile, many times.
      const after = scanner.scans();
      expect(await eventually(() => scanner.scans() >= after + 20, 20_000, 5), 'the scanner stopped scanning').toBe(true);
      expect(scanner.scans() - scansBefore).toBeGreaterThan(20);
      expect(scanner.hits().slice(seen).filter((hit) => !hit.startsWith(`hit ${holder.pid} `))).toEqual([]);
    } finally {
      process.env[SECRET_NAME] = secret;
      scanner.child.kill('SIGKILL');
      await new Promise((resolve) => (scanner.child.exitCode !== null ? resolve(undefined) : scanner.child.once('close', resolve)));
    }
  });
});
