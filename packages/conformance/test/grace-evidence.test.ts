/**
 * What the grace-period cases read from their command's output: ticks after
 * SIGTERM, and how long SIGTERM waited for the shell's trap, on the
 * sandbox's clock (src/cases/support/grace-evidence.ts).
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, test } from 'vitest';
import { GRACE_LOOP, GRACE_TRAP, graceEvidence, mayHaveLived } from '../src/cases/support/grace-evidence.js';

describe('graceEvidence', () => {
  test('counts the ticks after the report, and the wait between the two stamps', () => {
    expect(graceEvidence('ready\ntick\nterm 100.00 100.25\ntick\ntick\n')).toEqual({ tickedMs: 20, stalledMs: 250 });
  });

  test('without a stamp before SIGTERM, or without /proc/uptime, the wait is unknown: 0', () => {
    expect(graceEvidence('ready\nterm  100.25\ntick\n')).toEqual({ tickedMs: 10, stalledMs: 0 });
    expect(graceEvidence('ready\nterm  \ntick\n')).toEqual({ tickedMs: 10, stalledMs: 0 });
  });

  test('without a report of SIGTERM, nothing', () => {
    expect(graceEvidence('ready\n')).toEqual({ tickedMs: 0, stalledMs: 0 });
  });
});

describe('mayHaveLived', () => {
  const timing = { spacingMs: 150, roundTripMs: 10, hostLagMs: 20 };
  test("allows the period where the kit's spacing, with its leeway and the shell's wait, reaches it", () => {
    expect(mayHaveLived(240, timing, { tickedMs: 0, stalledMs: 0 })).toBe(false);
    expect(mayHaveLived(240, timing, { tickedMs: 0, stalledMs: 60 })).toBe(true);
  });
  test("or where the command's ticks and the shell's wait reach it", () => {
    expect(mayHaveLived(240, { spacingMs: 0, roundTripMs: 0, hostLagMs: 0 }, { tickedMs: 200, stalledMs: 30 })).toBe(false);
    expect(mayHaveLived(240, { spacingMs: 0, roundTripMs: 0, hostLagMs: 0 }, { tickedMs: 200, stalledMs: 40 })).toBe(true);
  });
});

describe('the command', () => {
  // The shells sandboxes run it under: dash as /bin/sh, and busybox's ash (the Docker adapter's test image).
  const shells: Array<[string, string[]]> = [['/bin/sh', []]];
  try {
    execFileSync('busybox', ['true']);
    shells.push(['busybox', ['sh']]);
  } catch {
    console.log('[grace-evidence] busybox is not installed: the command is checked under /bin/sh only');
  }
  test.for(shells)('under %s, reports SIGTERM with two stamps of the uptime and ticks after it', ([shell, pre]) => {
    // The command signals itself from a subshell once its loop runs: SIGTERM, then SIGKILL 0.2 s later.
    const script = `${GRACE_TRAP}; echo ready; (sleep 0.05; kill -TERM $$; sleep 0.2; kill -KILL $$) & ${GRACE_LOOP}`;
    let out = '';
    try {
      out = execFileSync(shell, [...pre, '-c', script], { encoding: 'utf8', timeout: 10_000 });
    } catch (error) {
      out = String((error as { stdout?: unknown }).stdout ?? '');
      expect((error as { signal?: unknown }).signal, out).toBe('SIGKILL');
    }
    const stamps = /term ([0-9.]+) ([0-9.]+)\n/.exec(out);
    expect(stamps, out).not.toBeNull();
    expect(Number(stamps![2])).toBeGreaterThanOrEqual(Number(stamps![1]));
    expect(graceEvidence(out).tickedMs, out).toBeGreaterThan(0);
  });
});
