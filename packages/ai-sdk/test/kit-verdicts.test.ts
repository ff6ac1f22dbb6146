// The conformance kit's verdicts that README.md publishes, pinned: a change in
// what fails (better or worse) fails here until the README says so too.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runConformance } from '@sandstream/conformance';
import type { SandboxFactory } from '@sandstream/types';
// @ts-expect-error: a plain JavaScript fixture, the module the kit's CLI loads
import roundTrip from './fixtures/round-trip-adapter.js';
// @ts-expect-error: a plain JavaScript fixture, the module the kit's CLI loads
import justBash from './fixtures/just-bash-adapter.js';

/** The cases the local adapter fails once it is seen through SandboxSession and back, each for a reason the README gives. */
export const ROUND_TRIP_FAILURES = [
  'arguments.argv-byte-exact', // one command string: argv past the kernel's 128 KiB per-argument limit
  'process.kill', // kill() takes no signal: SIGUSR1 cannot be sent
  'process.kill-stop-cont', // nor SIGSTOP
  'result.exit-codes', // wait() gives a number: death by SIGKILL is 137
  'termination.settings', // kill() runs the session's own grace period, after the caller's
  'owner.bound-stated', // a SandboxSession states no termination settings: no ownerLossMs
];

describe('the conformance kit through fromSandboxSession', () => {
  it(`fails the local adapter round trip (toSandboxSession, then fromSandboxSession) on exactly ${ROUND_TRIP_FAILURES.length} cases`, async () => {
    // owner.crash crashes a second OS process that loads the same module. A case gets 60 s: beside
    // a second suite, process.kill-stop-cont once reached the default 20 s and came out an error,
    // not the failure it is.
    const report = await runConformance({
      factory: roundTrip as SandboxFactory,
      ownerModule: fileURLToPath(new URL('./fixtures/round-trip-adapter.js', import.meta.url)),
      caseTimeoutMs: 60_000,
    });
    const by = (status: string): string[] => report.cases.filter((c) => c.status === status).map((c) => c.id);
    expect(by('error').map((id) => `${id}: ${report.cases.find((c) => c.id === id)?.message ?? ''}`)).toEqual([]);
    expect(by('fail').sort()).toEqual([...ROUND_TRIP_FAILURES].sort());
    expect(report.summary.pass).toBeGreaterThan(50);
  }, 300_000);

  it('stops before the first case on @ai-sdk/sandbox-just-bash: `command -v` finds no mktemp nor id', async () => {
    const report = await runConformance({ factory: justBash as SandboxFactory });
    expect(report.summary.pass + report.summary.fail).toBe(0);
    expect(report.cases.every((c) => c.status === 'error' && /lacks tools .*: mktemp, id/.test(c.message ?? ''))).toBe(true);
  }, 60_000);
});
