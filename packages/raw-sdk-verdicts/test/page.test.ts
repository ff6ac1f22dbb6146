/**
 * The committed page is what its record gives now, and the record still
 * describes what the workspace holds: the SDK versions it pins, the kit's
 * cases, the vendors of the page. The kit run itself takes minutes (it
 * waits out kill waits and case limits on the raw SDKs), too long for a
 * test: live-sample.test.ts reruns the quick part of it, and `npm run
 * verdicts` refreshes the whole record.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CASES, KIT_SPEC_VERSION, KIT_VERSION } from '@sandstream/conformance';
import { installedVersion, PAGE_PATH, PageError, RECORD_PATH, renderPage, summaryLine, VENDORS, type VerdictsRecord } from '../src/index.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const record = JSON.parse(readFileSync(join(ROOT, RECORD_PATH), 'utf8')) as VerdictsRecord;
const page = readFileSync(join(ROOT, PAGE_PATH), 'utf8');
const REFRESH = 'run npm run verdicts -w @sandstream/raw-sdk-verdicts';

describe('the verdicts page', () => {
  it('is what its record gives now (else: npm run verdicts -w @sandstream/raw-sdk-verdicts -- --render)', () => {
    expect(page).toBe(renderPage(record, VENDORS));
  });

  it("comes from a run of this kit on the SDK versions the workspace pins, for every vendor of the page", () => {
    expect({ spec: record.specVersion, kit: record.kitVersion }, REFRESH).toEqual({ spec: KIT_SPEC_VERSION, kit: KIT_VERSION });
    expect(record.vendors.map((v) => [v.id, v.sdk, v.sdkVersion, v.adapter]), REFRESH).toEqual(
      VENDORS.map((v) => [v.id, v.sdk, installedVersion(v.sdk), v.adapter]),
    );
  });

  it("names only cases the kit has, with the kit's requirement ids", () => {
    const kit = new Map(CASES.map((c) => [c.id, c.requirements]));
    for (const vendor of record.vendors) {
      for (const failure of [...vendor.raw.failures, ...vendor.control.failures]) {
        expect(kit.get(failure.id), `${vendor.id}: ${failure.id}; ${REFRESH}`).toEqual(failure.requirements);
      }
    }
  });

  it("counts, for each run, every case of the kit", () => {
    for (const vendor of record.vendors) {
      for (const run of [vendor.raw, vendor.control]) {
        const { pass, fail, skipped, disabled, error } = run.counts;
        expect(pass + fail + skipped + disabled + error, `${vendor.id} ${run.name}`).toBe(CASES.length);
        expect(run.failures.length, `${vendor.id} ${run.name}`).toBe(fail + error);
      }
    }
  });
});

describe('renderPage', () => {
  const e2b = record.vendors[0]!;
  const one = (failures: VerdictsRecord['vendors'][number]['raw']['failures']): VerdictsRecord => ({
    ...record,
    vendors: [{ ...e2b, raw: { ...e2b.raw, failures } }, ...record.vendors.slice(1)],
  });

  it('refuses a failure nothing explains, naming it and where the explanation goes', () => {
    const unexplained = one([...e2b.raw.failures, { id: 'made.up', requirements: ['SS-MADE-1'], status: 'fail', saw: 'something odd' }]);
    expect(() => renderPage(unexplained, VENDORS)).toThrow(PageError);
    expect(() => renderPage(unexplained, VENDORS)).toThrow(/e2b: nothing explains why made\.up \(SS-MADE-1\) fails \("something odd"\): add an entry to EXPLANATIONS\.e2b/);
  });

  it('refuses an explanation that no failure uses any more', () => {
    const fewer = one(e2b.raw.failures.filter((f) => !f.requirements.some((r) => r.startsWith('SS-USER-'))));
    expect(() => renderPage(fewer, VENDORS)).toThrow(/EXPLANATIONS\.e2b has entries no failing case uses \(SS-USER\)/);
  });

  it('refuses a record whose vendors are not those of the page', () => {
    expect(() => renderPage({ ...record, vendors: record.vendors.slice(1) }, VENDORS)).toThrow(/the record has the vendors vercel, docker, the page lists e2b, vercel, docker/);
  });

  it('states the verdict as the kit does', () => {
    const counts = { pass: 3, fail: 1, skipped: 2, disabled: 0, error: 0 };
    const run = { name: 'x', capabilities: e2b.raw.capabilities, counts, ok: false, failures: [] };
    expect(summaryLine(run, '1.1')).toBe('DOES NOT CONFORM to Sandstream 1.1: 3 passed, 1 failed, 2 skipped, 0 disabled, 0 errors');
    expect(summaryLine({ ...run, ok: true, counts: { ...counts, fail: 0 } }, '1.1')).toMatch(/^CONFORMS to Sandstream 1\.1: /);
    expect(summaryLine({ ...run, ok: true, counts: { ...counts, fail: 0, disabled: 1 } }, '1.1')).toMatch(/^PASSED the cases that ran/);
  });
});
