// Whether a background command's record names a running supervisor (ADR-0036): the answer a
// follower ends on and a listing reports. The record's pid file holds the supervisor's pid and
// start time; these tests write records by hand around processes whose state they control, and
// ask the records program (`show`) as an attach does.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { readProcStat } from '@sandstream/types/runtime';
import { killEach, markedProcesses } from '@sandstream/test-support/processes';
import { unless } from '@sandstream/test-support/skips';
import { waitFor } from '@sandstream/test-support/timing';
import { backgroundArgv, recordsArgv } from '../src/background.js';
import { supervisorArgv, TAG_VARIABLE } from '../src/supervisor.js';
import { TESTED_SHELLS, missing, type Shell } from './harness.js';

const root = mkdtempSync(join(tmpdir(), 'sandstream-liveness-'));
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});
const started: ChildProcess[] = [];
afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL');
  // A supervised command that a failed test left running, and its holder (both tagged `ID…`).
  killEach(markedProcesses(TAG_VARIABLE, ID, { prefix: true }), 'SIGKILL');
});

// This run's own: the tag sweep after each test reaches every process of the host that carries it,
// and a second run of these tests beside this one must keep its own.
const ID = `liveness-${process.pid}-${randomBytes(4).toString('hex')}`;
const BOUND = 15_000;

let records = 0;

/** A record of `ID` whose pid file is `pid` (a line as the start writes it). */
function record(pid: string): string {
  const dir = join(root, `record-${++records}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'argv.json'), '["true"]\n');
  writeFileSync(join(dir, 'account'), '\n');
  writeFileSync(join(dir, 'pid'), `${pid}\n`);
  writeFileSync(join(dir, 'out'), '');
  writeFileSync(join(dir, 'err'), '');
  return dir;
}

/** The state the records program gives a record now: `running` or `ended`. */
function stateOf(shell: Shell, dir: string): string {
  const [path, ...args] = recordsArgv(shell.path!, 'show', dir, ID, '0');
  // Bounded here: a synchronous look holds the test runner's own timer back.
  const shown = spawnSync(path!, args, { encoding: 'utf8', timeout: 60_000 });
  expect(shown.status, `${shown.error?.message ?? ''} ${shown.stderr}`).toBe(0);
  return /^state (\w+)$/m.exec(shown.stdout)?.[1] ?? `no state in ${JSON.stringify(shown.stdout)}`;
}

function readIfThere(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** Started here and SIGKILLed after the test: none of them may have a child of its own. */
function start(argv: string[], stdin: 'ignore' | 'pipe' = 'ignore'): ChildProcess {
  const child = spawn(argv[0]!, argv.slice(1), { stdio: [stdin, 'ignore', 'ignore'] });
  started.push(child);
  return child;
}

/** Its pid and start time, as the background start writes them. */
function identity(pid: number): string {
  const stat = readProcStat(pid);
  if (stat === undefined) throw new Error(`process ${pid} is gone`);
  return `${pid} ${stat.startTicks}`;
}

describe.each(TESTED_SHELLS)("a background record's liveness under $name", (shell) => {
  const it_ = unless(it, missing(shell));

  it_('the start writes the pid and start time of the shell that becomes the supervisor', async () => {
    const dir = join(root, `started-${++records}`);
    const done = join(root, `done-${records}`);
    const argv = ['sh', '-c', 'while [ ! -e "$0" ]; do sleep 0.01; done', done];
    const supervisor = supervisorArgv({ id: ID, argv, shell: shell.path! });
    const [path, ...args] = backgroundArgv(shell.path!, dir, argv, undefined, supervisor);
    const starter = start([path!, ...args]);
    await waitFor(() => /\x1esandstream:\S+ start /.test(readIfThere(join(dir, 'err'))), BOUND, "the supervisor's start report");
    expect(readIfThere(join(dir, 'pid'))).toBe(`${identity(starter.pid!)}\n`);
    expect(stateOf(shell, dir)).toBe('running');
    writeFileSync(done, '');
    await waitFor(() => stateOf(shell, dir) === 'ended', BOUND, 'the record ended with its supervisor');
  });

  // Each look is a shell and its tools started beside a core kept busy with execs: under a second
  // test suite 60 of them took over 30 s, so the case has a limit of its own.
  it_('holds through every exec of the pid: an exec empties the argv for a moment, never the identity', { timeout: 180_000 }, async () => {
    // A shell that execs itself without end, its argv always holding the id: a supervisor is the
    // start's shell after one such exec. Read by argv, about one look in seven here said `ended`:
    // 30 looks all `running` then had a chance of 1 in 100.
    const loop = 'exec /bin/sh -c "$0" "$0" "$1"';
    const child = start(['/bin/sh', '-c', loop, loop, ID]);
    await waitFor(() => readProcStat(child.pid!) !== undefined, BOUND, 'the exec loop started');
    const dir = record(identity(child.pid!));
    const states = Array.from({ length: 30 }, () => stateOf(shell, dir));
    expect(states.filter((state) => state !== 'running')).toEqual([]);
  });

  it_('ends once the pid is a zombie', async () => {
    // The child ends once its parent is a `sleep`, which never reaps it (a shell could).
    const pidFile = join(root, `zombie-${++records}`);
    const parent = start(['/bin/sh', '-c', 'sh -c \'until [ "$(cat /proc/$PPID/comm 2>/dev/null || echo sleep)" = sleep ]; do sleep 0.01; done\' & echo $! > "$0"; exec sleep 1000', pidFile]);
    let zombie = 0;
    await waitFor(
      () => {
        zombie = Number(readIfThere(pidFile).trim());
        return zombie > 0 && readProcStat(zombie)?.state === 'Z';
      },
      BOUND,
      'the zombie',
    );
    expect(readProcStat(parent.pid!)?.state).not.toBe('Z');
    expect(stateOf(shell, record(identity(zombie)))).toBe('ended');
  });

  it_('ends once the pid is another process: the start time tells them apart', async () => {
    const other = start(['sleep', '1000']);
    await waitFor(() => readProcStat(other.pid!) !== undefined, BOUND, 'the other process started');
    const [pid, ticks] = identity(other.pid!).split(' ');
    expect(stateOf(shell, record(`${pid} ${ticks}`))).toBe('running');
    expect(stateOf(shell, record(`${pid} ${Number(ticks) + 1}`))).toBe('ended');
  });

  it_('a record without a start time (an earlier driver) is read by the argv: one word is the id', async () => {
    // A shell in its `read` builtin (standard input a pipe that stays open): no child to outlive
    // it, its argv ending in the id.
    const holder = start(['/bin/sh', '-c', 'read -r line', 'holder', ID], 'pipe');
    const plain = start(['sleep', '1000']);
    const held = record(String(holder.pid));
    await waitFor(() => stateOf(shell, held) === 'running', BOUND, "the holder's argv after its exec");
    expect(stateOf(shell, record(String(plain.pid)))).toBe('ended');
    expect(stateOf(shell, record(''))).toBe('ended');
  });
});
