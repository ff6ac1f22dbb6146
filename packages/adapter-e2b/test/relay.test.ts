/**
 * The output relay's own complaints never become the command's output: a
 * command ended while it was starting has its FIFOs removed before the relay
 * opens them, and `cat`'s "No such file or directory" used to arrive as the
 * command's stderr (found by the soak, packages/soak, seed 2 on e2b).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { procStat } from '@sandstream/test-support/processes';
import { afterAll, describe, expect, it } from 'vitest';
import { RELAY, SIGNAL, UNBLOCK } from '../src/scripts.js';
import { waitFor, within } from './helpers.js';

const root = mkdtempSync(join(tmpdir(), 'sandstream-relay-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('the output relay', () => {
  it('writes nothing of its own when it cannot remove its directory', () => {
    // The unblock helper renaming the FIFOs while the relay removes the directory made rm(1) say
    // "Directory not empty" into the command's stderr (the e2b long soak, seed 7, process 1427).
    const bin = mkdtempSync(join(root, 'failing-rm-'));
    writeFileSync(join(bin, 'rm'), "#!/bin/sh\necho \"rm: cannot remove '$2': Directory not empty\" >&2\nexit 1\n");
    chmodSync(join(bin, 'rm'), 0o755);
    const dir = join(root, 'kept');
    mkdirSync(dir);
    expect(spawnSync('mkfifo', [join(dir, 'o'), join(dir, 'e')]).status).toBe(0);
    const relay = spawnSync('sh', ['-c', `(exec >"$0/o" 2>"$0/e"; printf out; printf err >&2) & ${RELAY}`, dir, dir, '2147483646', ''], {
      encoding: 'utf8',
      timeout: 10_000,
      env: { ...process.env, PATH: `${bin}:${process.env['PATH'] ?? '/usr/bin:/bin'}` },
    });
    expect(relay.status).toBe(0);
    expect(relay.stdout).toBe('out');
    expect(relay.stderr).toBe('err');
  });

  it('writes nothing of its own when the FIFOs are already gone', () => {
    // A group id no process has: the relay finds the tree gone at once.
    const result = spawnSync('sh', ['-c', RELAY, 'sandstream-relay', join(root, 'removed'), '2147483646'], { encoding: 'utf8', timeout: 10_000 });
    expect(result.status).toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe('');
  });
});

/**
 * A group number is taken again once nothing of its group is left (the soak,
 * seed 7 on e2b, 10 000 processes: a command's end waited 20 s for the group
 * that took its number). The relay and the signal helper tell the command's
 * group by its leader's start time, which the launcher reports.
 */
describe('a group number another group took since', () => {
  const groups: ChildProcess[] = [];
  afterAll(() => {
    // Only a group whose leader lives: the number of one that ended may be a stranger's by now.
    // process.kill, not kill(1): procps's kill here turned `-KILL -<pgid>` into kill(-1, SIGKILL),
    // every process of the machine.
    for (const group of groups) {
      if (group.pid === undefined || group.exitCode !== null || group.signalCode !== null) continue;
      try {
        process.kill(-group.pid, 'SIGKILL');
      } catch {
        // Gone meanwhile.
      }
    }
  });

  /**
   * A live group led by a fresh process (its own session, as the launcher's), its leader's start
   * time, and its end. With `trapFile`, the leader records a SIGTERM there and lives on for a second.
   */
  function liveGroup(trapFile?: string): { pgid: number; start: string; ended: Promise<NodeJS.Signals | null> } {
    const script = trapFile === undefined ? 'sleep 30 & wait' : 'trap \'echo TERM >> "$0"\' TERM; sleep 1';
    const group = spawn('sh', ['-c', script, trapFile ?? 'sh'], { detached: true, stdio: 'ignore' });
    groups.push(group);
    const ended = new Promise<NodeJS.Signals | null>((resolve) => group.once('exit', (_code, signal) => resolve(signal)));
    // Field 22 of /proc/<pid>/stat, the 20th after the command name.
    return { pgid: group.pid!, start: procStat(group.pid!)![19]!, ended };
  }

  it('the signal helper leaves a group alone whose leader started at another time than the command\'s', async () => {
    const trapFile = join(root, 'term');
    const { pgid, start, ended } = liveGroup(trapFile);
    expect(spawnSync('sh', ['-c', SIGNAL, 'sandstream-signal', 'TERM', String(pgid), String(Number(start) - 1)]).status).toBe(0);
    // The leader handles a pending SIGTERM before it exits: its exit proves none came.
    expect(await within(10_000, ended, 'the leader ending by itself')).toBeNull();
    expect(() => readFileSync(trapFile, 'utf8')).toThrow();
  });

  it('the signal helper signals the group with the leader\'s own start time', async () => {
    const { pgid, start, ended } = liveGroup();
    expect(spawnSync('sh', ['-c', SIGNAL, 'sandstream-signal', 'KILL', String(pgid), start]).status).toBe(0);
    expect(await within(10_000, ended, 'the leader ending by SIGKILL')).toBe('SIGKILL');
  });

  it('the relay does not wait for such a group, and waits for the command\'s own', () => {
    const { pgid, start } = liveGroup();
    const other = spawnSync('sh', ['-c', RELAY, 'sandstream-relay', join(root, 'gone'), String(pgid), String(Number(start) + 1)], { timeout: 10_000 });
    expect(other.status).toBe(0);
    // The command's own group: the relay is still waiting when the bound ends it.
    const own = spawnSync('sh', ['-c', RELAY, 'sandstream-relay', join(root, 'gone'), String(pgid), start], { timeout: 1_000 });
    expect(own.signal).toBe('SIGTERM');
  });
});

/**
 * A relay started late, its start racing the command's end, opened its FIFOs
 * after the unblock helper's last opening and before it removed them: the
 * relay then waited forever for a writer (the e2b 10 000-process soak, seed
 * 7: processes 1438, 1873 and 7150, each ended by a timeout of 300-550 ms,
 * "not reported gone within 20000 ms of SIGKILL"). The helper now renames
 * the FIFOs before it opens them.
 */
describe('the unblock helper and a late relay', () => {
  const started: ChildProcess[] = [];
  afterAll(() => {
    for (const child of started) child.kill('SIGKILL');
  });

  function ended(child: ChildProcess): Promise<number | null> {
    return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  /**
   * Runs the helper on `dir` with a `sleep` that holds its third call, the
   * one after the last opening, until the returned `release` is called.
   */
  async function helperHeldAfterLastOpening(dir: string): Promise<{ release: () => void; status: Promise<number | null> }> {
    const control = mkdtempSync(join(root, 'control-'));
    const realSleep = spawnSync('sh', ['-c', 'command -v sleep'], { encoding: 'utf8' }).stdout.trim();
    const bin = join(control, 'bin');
    mkdirSync(bin);
    writeFileSync(
      join(bin, 'sleep'),
      [
        '#!/bin/sh',
        `c=${control}`,
        'n=$(( $(cat "$c/count" 2>/dev/null || echo 0) + 1 )); echo "$n" > "$c/count"',
        `[ "$n" = 3 ] && { : > "$c/held"; while [ ! -e "$c/go" ]; do ${realSleep} 0.01; done; }`,
        `exec ${realSleep} "$@"`,
      ].join('\n'),
    );
    chmodSync(join(bin, 'sleep'), 0o755);
    const helper = spawn('sh', ['-c', UNBLOCK, 'sandstream-unblock', dir], {
      env: { ...process.env, PATH: `${bin}:${process.env['PATH'] ?? '/usr/bin:/bin'}` },
      stdio: 'ignore',
    });
    started.push(helper);
    const status = ended(helper);
    await waitFor(() => existsSync(join(control, 'held')), 10_000, 'the helper reaching its last pause');
    return { release: () => writeFileSync(join(control, 'go'), ''), status };
  }

  function fifoDir(name: string): string {
    const dir = join(root, name);
    mkdirSync(dir);
    expect(spawnSync('mkfifo', [join(dir, 'o'), join(dir, 'e')]).status).toBe(0);
    return dir;
  }

  it('a relay that opens the FIFOs after the last opening ends', async () => {
    const dir = fifoDir('late');
    const { release, status } = await helperHeldAfterLastOpening(dir);
    // A group number no process has: the relay ends as soon as its copies do.
    const relay = spawn('sh', ['-c', RELAY, 'sandstream-relay', dir, '2147483646', ''], { stdio: 'ignore' });
    started.push(relay);
    expect(await within(10_000, ended(relay), 'the late relay')).toBe(0);
    release();
    expect(await within(10_000, status, 'the helper')).toBe(0);
    expect(existsSync(dir)).toBe(false);
  });

  it('lets go of a relay that waited on the FIFOs before it ran', async () => {
    const dir = fifoDir('early');
    const relay = spawn('sh', ['-c', RELAY, 'sandstream-relay', dir, '2147483646', ''], { stdio: 'ignore' });
    started.push(relay);
    const relayEnded = ended(relay);
    const helper = spawnSync('sh', ['-c', UNBLOCK, 'sandstream-unblock', dir], { timeout: 10_000 });
    expect(helper.status).toBe(0);
    expect(await within(10_000, relayEnded, 'the relay')).toBe(0);
    expect(existsSync(dir)).toBe(false);
  });
});
