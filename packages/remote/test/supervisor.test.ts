import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { isLive, markedProcesses, procStat } from '@sandstream/test-support/processes';
import { unless } from '@sandstream/test-support/skips';
import { SUPERVISOR, SUPERVISOR_NAME, TAG_VARIABLE } from '../src/index.js';
import { SHELLS, TESTED_SHELLS, Supervised, missing, throughWrapper, type Shell } from './harness.js';

const started: Supervised[] = [];
const work = mkdtempSync(join(tmpdir(), 'sandstream-supervisor-'));

afterEach(() => {
  for (const s of started.splice(0)) s.cleanup();
});
afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});

function run(shell: Shell, argv: readonly string[], options?: ConstructorParameters<typeof Supervised>[2]): Supervised {
  const s = new Supervised(shell, argv, options);
  started.push(s);
  return s;
}

async function finished(s: Supervised): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  const ended = await s.ended;
  await s.closed;
  return ended;
}

// Every argv word a shell would otherwise interpret, and some it would drop.
const WORDS = ['a b', '"dq"', "'sq'", 'line\nbreak', '$HOME', '${PATH}', '*', '/*', '', '  ', '-n', '\\', '`id`', '$(id)', ';', '|', '~', 'é€', '\t'];

describe.each(TESTED_SHELLS)('the supervisor under $name', (shell) => {
  const it_ = unless(it, missing(shell));

  it_('passes argv to the command exactly, word for word', async () => {
    const s = run(shell, ['/usr/bin/printf', '%s\\0', ...WORDS]);
    await finished(s);
    expect(s.stdout().toString('utf8').split('\0').slice(0, -1)).toEqual(WORDS);
    expect(s.stderr().length).toBe(0);
    expect(s.reports.map((r) => r.type)).toEqual(['start', 'exit', 'gone']);
  });

  it_('passes argv bytes that are not UTF-8 unchanged', async () => {
    const s = run(shell, [], { raw: throughWrapper(shell, `/usr/bin/printf '%s' "$(printf '\\377\\376\\001x')"`) });
    await finished(s);
    expect([...s.stdout()]).toEqual([0xff, 0xfe, 0x01, 0x78]);
  });

  it_('starts the command in a session and group of its own and reports its pid, group and start time', async () => {
    const s = run(shell, ['/bin/sh', '-c', 'echo $$; read -r l < /proc/$$/stat; echo "$l"']);
    const start = await s.report('start');
    await finished(s);
    const [pid, stat] = s.stdout().toString().split('\n');
    const fields = (stat ?? '').slice((stat ?? '').lastIndexOf(')') + 2).split(' ');
    expect(start.pid).toBe(Number(pid));
    expect(start.pgid).toBe(start.pid);
    expect(Number(fields[2])).toBe(start.pid); // pgrp
    expect(Number(fields[3])).toBe(start.pid); // session
    expect(start.startTime).toBe(fields[19]); // field 22: start time
    const own = procStat(process.pid);
    expect(Number(fields[3])).not.toBe(Number(own?.[3]));
  });

  it_('reports a program that does not exist, without starting anything', async () => {
    const s = run(shell, ['no-such-program-sandstream']);
    expect(await finished(s)).toEqual({ code: 127, signal: null });
    expect(s.reports).toEqual([{ type: 'noexec', reason: 'ENOENT' }]);
  });

  it_('execs a prefix in front of the command, and checks the command after it', async () => {
    const s = run(shell, ['/bin/sh', '-c', 'printf %s "$X"'], { prefix: ['/usr/bin/env', 'X=a b'] });
    await finished(s);
    expect(s.stdout().toString()).toBe('a b');
    expect(s.reports.map((r) => r.type)).toEqual(['start', 'exit', 'gone']);
    const missingCommand = run(shell, ['no-such-program-sandstream'], { prefix: ['/usr/bin/env', 'X=1'] });
    expect(await finished(missingCommand)).toEqual({ code: 127, signal: null });
    expect(missingCommand.reports).toEqual([{ type: 'noexec', reason: 'ENOENT' }]);
  });

  it_('reports a program of the prefix that does not exist, by its path', async () => {
    const s = run(shell, ['true'], { prefix: ['/no/such/prlimit', '--cpu=1:2', '--', '/usr/bin/env', 'A=/x'] });
    expect(await finished(s)).toEqual({ code: 127, signal: null });
    expect(s.reports).toEqual([{ type: 'noexec', reason: 'ENOENT /no/such/prlimit' }]);
  });

  it_('starts in $HOME when asked, and where it was started when $HOME is not a directory', async () => {
    const home = mkdtempSync(join(work, 'home-'));
    const s = run(shell, ['/bin/sh', '-c', 'pwd -P'], { home: true, env: { ...process.env, HOME: home }, cwd: '/' });
    await finished(s);
    expect(s.stdout().toString()).toBe(`${home}\n`);
    const gone = run(shell, ['/bin/sh', '-c', 'pwd -P'], { home: true, env: { ...process.env, HOME: join(work, 'absent') }, cwd: '/' });
    await finished(gone);
    expect(gone.stdout().toString()).toBe('/\n');
  });

  it_('hands the command its standard input', async () => {
    const s = run(shell, ['/bin/cat']);
    s.child.stdin?.end('through stdin\n');
    await finished(s);
    expect(s.stdout().toString()).toBe('through stdin\n');
  });

  it_('leaves standard input to the command alone: once it closes it, a writer gets EPIPE (SS-STDIN-5)', async () => {
    const s = run(shell, ['/bin/sh', '-c', 'exec 0<&-; echo closed; sleep 5']);
    await s.lines(1);
    const error = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
      s.child.stdin!.on('error', resolve);
      const write = (): void => {
        // A pipe buffer's worth at a time: a reader left behind would take them all without EPIPE.
        if (s.child.stdin!.write(Buffer.alloc(65_536))) setImmediate(write);
        else s.child.stdin!.once('drain', write);
      };
      write();
    });
    expect(error?.code).toBe('EPIPE');
  });

  const statuses: Array<[string, string, { code: number | null; signal: NodeJS.Signals | null }, unknown]> = [
    ['exit 0', 'exit 0', { code: 0, signal: null }, { kind: 'code', code: 0 }],
    ['exit 3', 'exit 3', { code: 3, signal: null }, { kind: 'code', code: 3 }],
    ['exit 255', 'exit 255', { code: 255, signal: null }, { kind: 'code', code: 255 }],
    ['exit 143', 'exit 143', { code: 143, signal: null }, { kind: 'code', code: 143 }],
    ['death by SIGTERM', 'kill -s TERM $$', { code: null, signal: 'SIGTERM' }, { kind: 'signal', number: 15, signal: 'SIGTERM', core: false }],
    ['death by SIGKILL', 'kill -s KILL $$', { code: null, signal: 'SIGKILL' }, { kind: 'signal', number: 9, signal: 'SIGKILL', core: false }],
  ];
  it_.each(statuses)('reports %s exactly, and ends the same way itself', async (_title, script, own, status) => {
    const s = run(shell, ['/bin/sh', '-c', script]);
    expect(await finished(s)).toEqual(own);
    expect(s.reports.slice(1)).toEqual([{ type: 'exit', status }, { type: 'gone' }]);
  });

  it_('forwards SIGTERM to every level of a three-level tree', async () => {
    const l3 = 'echo $$; exec sleep 60';
    const l2 = 'echo $$; /bin/sh -c "$0" & wait';
    const s = run(shell, ['/bin/sh', '-c', 'echo $$; /bin/sh -c "$0" "$1" & wait', l2, l3]);
    const pids = (await s.lines(3)).map(Number);
    const start = await s.report('start');
    expect(pids).toContain(start.pid);
    for (const pid of pids) expect(procStat(pid)?.[2]).toBe(String(start.pid));
    s.child.kill('SIGTERM');
    expect(await finished(s)).toEqual({ code: null, signal: 'SIGTERM' });
    for (const pid of pids) expect(isLive(pid)).toBe(false);
    expect(s.reports.find((r) => r.type === 'exit')).toEqual({ type: 'exit', status: { kind: 'signal', number: 15, signal: 'SIGTERM', core: false } });
  });

  it_('forwards signals to members of the session that moved to another group', async () => {
    // bash with job control gives its background job a group of its own, in the same session.
    const s = run(shell, ['/bin/bash', '-c', 'set -m; sleep 60 & echo $!; wait']);
    const [member] = (await s.lines(1)).map(Number);
    const start = await s.report('start');
    expect(procStat(member as number)?.[3]).toBe(String(start.pid));
    expect(procStat(member as number)?.[2]).not.toBe(String(start.pid));
    s.child.kill('SIGTERM');
    await finished(s);
    expect(isLive(member as number)).toBe(false);
  });

  it_('forwards SIGINT, which the command receives at its default disposition', async () => {
    const s = run(shell, ['/bin/sh', '-c', 'grep SigIgn /proc/$$/status; exec sleep 60']);
    const start = await s.report('start');
    expect(start.interrupt).toBe('default');
    expect((await s.lines(1))[0]).toBe('SigIgn:\t0000000000000000');
    s.child.kill('SIGINT');
    expect(await finished(s)).toEqual({ code: null, signal: 'SIGINT' });
    expect(s.reports.find((r) => r.type === 'exit')).toMatchObject({ status: { kind: 'signal', signal: 'SIGINT' } });
  });

  it_('leaves a member that called setsid findable by its tag', async () => {
    const s = run(shell, ['/bin/sh', '-c', '(setsid sleep 60 </dev/null >/dev/null 2>&1 & echo $!)']);
    const [escapee] = (await s.lines(1)).map(Number);
    const start = await s.report('start');
    await finished(s);
    expect(s.reports.map((r) => r.type)).toEqual(['start', 'exit', 'gone']);
    expect(isLive(escapee as number)).toBe(true);
    expect(procStat(escapee as number)?.[3]).not.toBe(String(start.pid));
    expect(markedProcesses(TAG_VARIABLE, s.id).map((p) => p.pid)).toContain(escapee);
  });

  it_('reports gone only after a member that holds on has ended', async () => {
    const fifo = join(work, `hold-${s4()}`);
    execFileSync('mkfifo', [fifo]);
    const s = run(shell, ['/bin/sh', '-c', '(read -r x < "$0"; echo released) & echo $!', fifo]);
    const [holder] = (await s.lines(1)).map(Number);
    await s.report('exit');
    // Two polls begun after the exit report arrived: the supervisor is waiting for the tree,
    // the holder lives, and no gone has been written.
    await s.polls(2);
    expect(isLive(holder as number)).toBe(true);
    // `held` said so at once: the driver reports leaderExited on it, not on a timer.
    expect(s.reports.map((r) => r.type)).toEqual(['start', 'exit', 'held']);
    expect(s.child.exitCode).toBe(null);
    writeFileSync(fifo, 'go\n');
    await s.report('gone');
    expect(isLive(holder as number)).toBe(false);
    await finished(s);
    expect(s.stdout().toString()).toBe(`${holder}\nreleased\n`);
  });

  it_('passes binary output of more than 1 MiB through both streams byte for byte', async () => {
    // Every byte value, a frame mark of another id and a truncated one of none, and noise.
    const head = Buffer.concat([Buffer.from([...Array(256).keys()]), Buffer.from('\u001esandstream:not-this-id gone\n\u001esandstream:')]);
    const data = Buffer.concat([head, randomBytes(1536 * 1024), head]);
    const file = join(work, `out-${s4()}`);
    writeFileSync(file, data);
    const s = run(shell, ['/bin/sh', '-c', 'cat "$0"; cat "$0" >&2', file]);
    expect(await finished(s)).toEqual({ code: 0, signal: null });
    expect(s.stdout().equals(readFileSync(file))).toBe(true);
    expect(s.stderr().equals(data)).toBe(true);
    expect(s.reports.map((r) => r.type)).toEqual(['start', 'exit', 'gone']);
  });
});

/** Why the env-less test cannot run: it needs bubblewrap to put busybox's env in GNU env's place. */
function noBwrap(): string | undefined {
  if (process.env['CI'] !== undefined) return undefined;
  try {
    execFileSync('bwrap', ['--version'], { stdio: 'ignore' });
  } catch {
    return 'bubblewrap is not installed (Debian: apt-get install bubblewrap)';
  }
  const dash = SHELLS.find((s) => s.name === 'dash')!;
  return missing(dash) ?? (SHELLS.find((s) => s.name === 'busybox ash')!.path === undefined ? 'busybox is not installed' : undefined);
}

describe('the supervisor where env cannot reset signals', () => {
  unless(it, noBwrap())('starts the command with INT and QUIT ignored, and says so in its start report', async () => {
    // In a mount namespace of its own, /usr/bin/env is busybox's, which has no --default-signal.
    const dash = SHELLS.find((s) => s.name === 'dash')!.path!;
    const busybox = execFileSync('readlink', ['-f', SHELLS.find((s) => s.name === 'busybox ash')!.path!], { encoding: 'utf8' }).trim();
    const s = run(SHELLS[0]!, [], {
      raw: (id) => ['bwrap', '--dev-bind', '/', '/', '--ro-bind', busybox, '/usr/bin/env', dash, '-c', SUPERVISOR, SUPERVISOR_NAME, id, '0', '0', '', '', '/bin/sh', '-c', 'grep SigIgn /proc/$$/status'],
    });
    const start = await s.report('start');
    expect(await finished(s)).toEqual({ code: 0, signal: null });
    expect(start.interrupt).toBe('ignored');
    const mask = BigInt(`0x${s.stdout().toString().split('\t')[1]!.trim()}`);
    // SIGINT is 2 and SIGQUIT 3: bits 1 and 2 of the mask.
    expect(mask & 6n).toBe(6n);
  });
});

function s4(): string {
  return randomBytes(4).toString('hex');
}
