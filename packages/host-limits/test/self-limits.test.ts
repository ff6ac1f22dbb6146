// The limits of this very process, lowered through prlimit and lifted back,
// each checked by what the kernel then refuses or allows.
import { spawnSync } from 'node:child_process';
import { closeSync, openSync, readdirSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { asUnusedUid, liftSelfLimits, limitSelf, limitSelfUnavailable, softLimits, tasksByUid } from '../src/index.js';

const unavailable = limitSelfUnavailable();
if (unavailable !== undefined) console.log(`skipped: the limits of this process (${unavailable})`);

afterEach(async () => {
  await liftSelfLimits();
});

describe.skipIf(unavailable !== undefined)('limitSelf and liftSelfLimits', () => {
  it('a descriptor limit holds in this process (EMFILE past it) until lifted to the hard limit', async () => {
    const before = softLimits().openFiles;
    const openFiles = readdirSync('/proc/self/fd').length + 16;
    expect(await limitSelf({ openFiles })).toEqual({ openFiles });
    expect(softLimits().openFiles).toBe(String(openFiles));
    const held: number[] = [];
    let refused: unknown;
    try {
      for (let i = 0; i < openFiles; i++) held.push(openSync('/dev/null', 'r'));
    } catch (error) {
      refused = error;
    } finally {
      for (const fd of held) closeSync(fd);
    }
    expect((refused as NodeJS.ErrnoException | undefined)?.code).toBe('EMFILE');
    await liftSelfLimits();
    expect(softLimits().openFiles).not.toBe(String(openFiles));
    // Lifted to the hard limit, which is at least the soft one before.
    expect(before === 'unlimited' || softLimits().openFiles === 'unlimited' || Number(softLimits().openFiles) >= Number(before)).toBe(true);
  });

  it('a process limit counts the tasks the uid owns now, and is refused to root', async () => {
    if (process.getuid?.() === 0) {
      expect(limitSelfUnavailable({ processes: 1 })).toMatch(/root is exempt/);
      await expect(limitSelf({ processes: 1 })).rejects.toThrow(/root is exempt/);
    } else {
      const owned = tasksByUid().get(process.getuid!()) ?? 0;
      const set = await limitSelf({ processes: 1_000 });
      expect(set.processes).toBeGreaterThanOrEqual(owned + 1_000 - 50);
      expect(softLimits().processes).toBe(String(set.processes));
    }
  });
});

describe('asUnusedUid', () => {
  it('as root, runs a program as a uid that owns no task; otherwise the argv itself', () => {
    const run = asUnusedUid(['id', '-u']);
    if ('skip' in run) {
      console.log(`skipped: asUnusedUid as root (${run.skip})`);
      return;
    }
    if (process.getuid?.() !== 0) {
      expect(run).toEqual({ argv: ['id', '-u'], uid: undefined, env: {} });
      return;
    }
    expect(tasksByUid().has(run.uid!)).toBe(false);
    const ran = spawnSync(run.argv[0]!, run.argv.slice(1), { encoding: 'utf8', env: { ...process.env, ...run.env } });
    expect(ran.stdout.trim()).toBe(String(run.uid));
  });

  it('counts the tasks of this uid, this process among them', () => {
    expect(tasksByUid().get(process.getuid!())).toBeGreaterThanOrEqual(1);
  });
});
