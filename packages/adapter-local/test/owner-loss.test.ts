/**
 * The plain mode's guardian (src/guardian.ts): a command's tree does not
 * outlive its owner killed with SIGKILL (termination.ownerLossMs: the grace
 * period plus 1 s); the guardian signals no group that is gone nor one
 * whose number another process holds, keeps no Node.js process alive, and
 * is replaced when it is killed. Real processes throughout: each owner is
 * a Node.js process running test/fixtures/owner.mjs on the built package.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { killEach } from '@sandstream/test-support/processes';
import { unless } from '@sandstream/test-support/skips';
import { waitFor, within } from '@sandstream/test-support/timing';
import { InvalidArgument } from '@sandstream/types';
import { defineSandbox, liveProcesses, readProcStat } from '@sandstream/types/runtime';
import { GUARDIAN_ARGS, GUARDIAN_ENV, GUARDIAN_SCRIPT, processGuardian } from '../src/guardian.js';
import { localBackend } from '../src/index.js';
import { probe } from '../src/isolation/probe.js';
import { GRACE_MS, isAlive, MARKER, RUN_ID, shellcheckMissing, shellcheckSh, testSandbox } from './helpers.js';
import { commandProcesses, killOwnerAndWait, OWNER_LOSS_MS, running, startOwner, TREE } from './owner-helpers.js';

describe("a plain command's tree does not outlive its owner", () => {
  it("killed with SIGKILL, the owner's foreground and background trees are gone within the bound it states, and the guardian exits", async () => {
    const { owner, report, token } = await startOwner('guarded', TREE);
    expect(report.termination.ownerLossMs).toBe(OWNER_LOSS_MS);
    // Proven running first: each a shell and its two sleeps.
    await running(token, ['fg', 'bg']);
    expect(commandProcesses(token, 'fg')).toContain(report.pids['fg']);
    expect(isAlive(report.guardians[0]!)).toBe(true);
    await killOwnerAndWait(owner, token, ['fg', 'bg']);
    await waitFor(() => !isAlive(report.guardians[0]!), 5_000, 'the guardian exits once done');
  });

  it('a command that ignores SIGTERM gets SIGTERM first, and SIGKILL once the grace period is over', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandstream-owner-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const log = join(dir, 'signals');
    // The shell notes SIGTERM and waits on; its children ignore it.
    const script = `trap 'echo TERM >> "$0"' TERM; (trap '' TERM; exec sleep 300) & (trap '' TERM; exec sleep 301) & while :; do wait; done`;
    // A longer grace period: the trap runs within it even on a loaded machine.
    const graceMs = 2_000;
    const { owner, report, token } = await startOwner('guarded', ['sh', '-c', script, log], graceMs);
    expect(report.termination.ownerLossMs).toBe(graceMs + 1_000);
    await running(token, ['fg', 'bg']);
    const elapsed = await killOwnerAndWait(owner, token, ['fg', 'bg'], graceMs + 1_000);
    expect(readFileSync(log, 'utf8')).toBe('TERM\nTERM\n');
    // /proc/uptime, the guardian's clock, counts hundredths of a second.
    expect(elapsed, 'SIGKILL came before the grace period was over').toBeGreaterThanOrEqual(graceMs - 20);
  });

  it('a guardian that was killed is replaced at the next command, and the new one ends the earlier command too', async () => {
    const { owner, report, token } = await startOwner('replace', TREE);
    const [first, second] = report.guardians;
    expect(second).toBeTypeOf('number');
    expect(second).not.toBe(first);
    expect(isAlive(first!)).toBe(false);
    await running(token, ['first', 'second']);
    await killOwnerAndWait(owner, token, ['first', 'second']);
  });

  it("an owner that returns from its main exits on its own: the guardian keeps nothing alive, and exits after it", async () => {
    const { owner, report } = await startOwner('exit', ['true']);
    const guardian = report.guardians[0];
    expect(guardian).toBeTypeOf('number');
    const code = await within(10_000, new Promise((resolve) => owner.once('close', resolve)), 'the owner exiting by itself');
    expect(code).toBe(0);
    await waitFor(() => !isAlive(guardian!), 5_000, 'the guardian exits with nothing registered');
  });

  it('a backend built with { ownerGuard: false } states no bound, and its command survives the owner', async () => {
    const { owner, report, token } = await startOwner('unguarded', TREE);
    expect(report.termination.ownerLossMs).toBe(OWNER_LOSS_MS);
    expect(report.unguardedTermination?.ownerLossMs).toBeUndefined();
    await running(token, ['guarded', 'unguarded']);
    const unguarded = commandProcesses(token, 'unguarded');
    try {
      // The guarded tree's end, then the guardian's exit, show the guardian ran its course.
      await killOwnerAndWait(owner, token, ['guarded']);
      await waitFor(() => !isAlive(report.guardians[0]!), 5_000, 'the guardian exits once done');
      expect(unguarded.map(isAlive)).toEqual([true, true, true]);
    } finally {
      killEach(unguarded.map((pid) => ({ pid })));
    }
    await waitFor(() => unguarded.every((pid) => !isAlive(pid)), 5_000, 'the unguarded tree, killed by pid');
  });
});

describe("the guardian's registrations in this process", () => {
  it('holds a group while it lives and forgets it once it is gone; the variant without a guardian registers nothing', async () => {
    const sb = testSandbox();
    const guardian = processGuardian()!;
    const proc = sb.stream(['sleep', '300']);
    await proc.started();
    expect(guardian.registered()).toContain(proc.pid);
    expect(isAlive(guardian.pid!)).toBe(true);
    await proc[Symbol.asyncDispose]();
    expect(guardian.registered()).not.toContain(proc.pid);
    const result = await sb.run(['sh', '-c', 'echo $$']);
    expect(guardian.registered()).not.toContain(Number(result.stdoutText));

    const bare = defineSandbox(localBackend({ graceMs: GRACE_MS, env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', [MARKER]: RUN_ID } }, { ownerGuard: false }));
    expect(bare.termination?.ownerLossMs).toBeUndefined();
    const unguarded = bare.stream(['sleep', '300']);
    await unguarded.started();
    expect(guardian.registered()).not.toContain(unguarded.pid);
    await unguarded[Symbol.asyncDispose]();
    await bare.close();
  });

  it('localBackend() checks its variant', () => {
    expect(() => localBackend({}, { ownerGuard: 'no' as unknown as boolean })).toThrow(InvalidArgument);
    expect(() => localBackend({}, { ownerguard: false } as never)).toThrow(/variant\.ownerguard/);
    expect(localBackend({ graceMs: 100 }).ownerLossMs).toBe(1_100);
  });

  unless(it, probe() instanceof Error ? 'this machine cannot make the namespaces' : undefined)(
    'the isolated mode states the same bound',
    async () => {
      const sb = testSandbox({ isolation: 'namespaces' });
      expect(sb.termination?.ownerLossMs).toBe(GRACE_MS + 1_000);
      await sb.close();
    },
  );
});

/** The shells the script must run under, as the argv that starts each. */
const SHELLS: readonly (readonly [string, readonly string[]])[] = [
  ['dash', ['/bin/dash']],
  ['bash', ['/bin/bash']],
  ['busybox ash', ['/bin/busybox', 'ash']],
];

/** The name of a process (its `comm`), or undefined once it is gone. */
function commandName(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'latin1').trimEnd();
  } catch {
    return undefined;
  }
}

/** A process in a session of its own, killed by pid however the test ends. */
function detached(argv: readonly string[]): number {
  const child = spawn(argv[0]!, argv.slice(1), { detached: true, stdio: 'ignore' });
  onTestFinished(() => void child.kill('SIGKILL'));
  return child.pid!;
}

describe("the guardian's script", () => {
  for (const [name, shell] of SHELLS) {
    unless(it, existsSync(shell[0]!) ? undefined : `${shell[0]} is not installed`)(
      `under ${name}: at end-of-file ends what is registered (SIGKILL after the grace period, a group of zombies counted gone), and neither a group unregistered nor a number another process holds`,
      async () => {
        const forgotten = detached(['sleep', '300']);
        const reused = detached(['sleep', '300']);
        const plain = detached(['sleep', '300']);
        const stubborn = detached(['sh', '-c', "trap '' TERM; exec sleep 300"]);
        // Registered once it ignores SIGTERM: its shell has run the trap and exec'd sleep.
        await waitFor(() => commandName(stubborn) === 'sleep', 5_000, 'the stubborn sleep');
        // A group whose one member, once ended, stays a zombie: its parent, outside the group, never reaps.
        const parent = detached(['sh', '-c', 'setsid sleep 300 & exec sleep 1000']);
        let zombie = 0;
        await waitFor(
          () => {
            zombie = liveProcesses().find((entry) => entry.ppid === parent && entry.pgrp === entry.pid && commandName(entry.pid) === 'sleep')?.pid ?? 0;
            return zombie !== 0;
          },
          5_000,
          'the sleep in a group of its own',
        );
        const start = (pid: number): number => readProcStat(pid)!.startTicks;
        // As the host starts it, but with its standard error kept, which must stay empty.
        const guardian = spawn(shell[0]!, [...shell.slice(1), ...GUARDIAN_ARGS], { stdio: ['pipe', 'ignore', 'pipe'], detached: true, cwd: '/', env: GUARDIAN_ENV });
        onTestFinished(() => void guardian.kill('SIGKILL'));
        let stderr = '';
        guardian.stderr!.setEncoding('utf8').on('data', (text: string) => (stderr += text));
        const exited = new Promise((resolve) => guardian.once('close', resolve));
        guardian.stdin!.write(
          [
            `+${forgotten} ${start(forgotten)} 100`,
            `-${forgotten}`,
            // The same number with another start time: a later process that was given it.
            `+${reused} ${start(reused) + 1} 100`,
            `+${plain} ${start(plain)} 100`,
            `+${stubborn} ${start(stubborn)} 200`,
            // A grace period the guardian must not wait out: a group of zombies only is gone.
            `+${zombie} ${start(zombie)} 10000`,
            // No request of a host's: ignored.
            '+0 1 1',
            'garbage',
            '',
          ].join('\n'),
        );
        // Alive while its input is open: it ends nothing before end-of-file.
        expect(isAlive(guardian.pid!)).toBe(true);
        const endedAt = Date.now();
        guardian.stdin!.end();
        expect(await within(10_000, exited, 'the guardian')).toBe(0);
        const elapsed = Date.now() - endedAt;
        expect(stderr).toBe('');
        // It does not wait for SIGKILL's delivery, which a loaded machine may make late.
        await waitFor(() => !isAlive(plain) && !isAlive(stubborn), 5_000, 'the registered groups ended');
        expect(readProcStat(zombie)?.state, 'the group left with a zombie').toBe('Z');
        expect(elapsed, 'the guardian waited for a group of zombies only').toBeLessThan(10_000);
        expect([forgotten, reused].map(isAlive), 'the unregistered group and the reused number').toEqual([true, true]);
        expect(elapsed, 'SIGKILL came before the grace period was over').toBeGreaterThanOrEqual(200 - 20);
      },
    );
  }

  unless(it, shellcheckMissing)('is clean under shellcheck -s sh', () => {
    expect(shellcheckSh(GUARDIAN_SCRIPT)).toEqual({ said: '', status: 0 });
  });
});
