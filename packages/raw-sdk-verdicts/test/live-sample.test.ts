/**
 * A sample of the record, rerun: the kit's quick failing cases on each raw
 * wrapper still fail as the record says, with the same line of what the kit
 * saw. The whole run takes minutes (teardown on the raw SDKs waits out kill
 * waits and case limits), so only cases that take under a second, leave
 * nothing running and fail whatever the timing are rerun here; `npm run
 * verdicts` reruns them all.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { unless } from '@sandstream/test-support/skips';
import { RECORD_PATH, recordRun, runKit, VENDORS, type VerdictsRecord } from '../src/index.js';
import { backendMissing } from './backends.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const record = JSON.parse(readFileSync(join(ROOT, RECORD_PATH), 'utf8')) as VerdictsRecord;

/** Per vendor, the cases rerun. */
const SAMPLE: Readonly<Record<string, readonly string[]>> = {
  e2b: [
    'start.spawn-failed',
    'process.command-id',
    'wait.idempotent-rejection',
    'arguments.argv-byte-exact',
    'bytes.all-values',
    'result.exit-codes',
    'result.schema',
    'termination.settings',
    'stdin.stopped-reading',
  ],
  // Not arguments.argv-byte-exact and environment.env: whether they fail depends on where the SDK's
  // network reads split the output (see their explanation), which is chance.
  vercel: ['start.spawn-failed', 'process.command-id', 'wait.idempotent-rejection', 'result.exit-codes', 'termination.settings'],
  docker: ['start.spawn-failed', 'process.command-id', 'wait.idempotent-rejection', 'result.exit-codes', 'termination.settings'],
};

describe.each(VENDORS.map((vendor) => [vendor.id, vendor] as const))('the raw %s wrapper, a sample of its record rerun', (id, vendor) => {
  unless(it, backendMissing(id))('fails those cases as the record says', { timeout: 120_000 }, async () => {
    const include = SAMPLE[id] ?? [];
    const recorded = record.vendors.find((v) => v.id === id)!.raw.failures.filter((f) => include.includes(f.id));
    // Each sampled case is one the record has failing: a sample of passes would prove nothing here.
    expect(recorded.map((f) => f.id).sort()).toEqual([...include].sort());
    const now = recordRun(await runKit(vendor.open('raw'), { include })).failures;
    expect(now, 'the record is stale: npm run verdicts -w @sandstream/raw-sdk-verdicts').toEqual(recorded);
  });
});
