/**
 * The record of a verdicts run (`verdicts.json`): what the kit found on
 * each vendor's raw wrapper and on its adapter, with nothing that differs
 * between two runs that found the same (no times, no dates, no pids), so the
 * page can be regenerated from it and checked against it.
 */
import { REQUIREMENTS } from '@sandstream/conformance';
import type { CapabilityManifest, ConformanceReport } from '@sandstream/types';
import { shorten } from './shorten.js';

/** A case that failed or errored. */
export interface CaseVerdict {
  readonly id: string;
  readonly requirements: readonly string[];
  readonly status: 'fail' | 'error';
  /** The kit's message, cut to one line that is the same from run to run ({@link shorten}). */
  readonly saw: string;
}

/** The counts of one run, as the kit's summary has them. */
export interface Counts {
  readonly pass: number;
  readonly fail: number;
  readonly skipped: number;
  readonly disabled: number;
  readonly error: number;
}

/** One kit run. */
export interface RunRecord {
  /** The sandbox's `name`. */
  readonly name: string;
  readonly capabilities: CapabilityManifest;
  readonly counts: Counts;
  /** The kit's verdict: every required case passed. */
  readonly ok: boolean;
  /** Every case that failed or errored, in spec order. */
  readonly failures: readonly CaseVerdict[];
}

/** One vendor: its raw wrapper's run and its adapter's run on the same backend. */
export interface VendorRecord {
  readonly id: string;
  readonly sdk: string;
  readonly sdkVersion: string;
  readonly adapter: string;
  readonly raw: RunRecord;
  readonly control: RunRecord;
}

/** The whole record. */
export interface VerdictsRecord {
  readonly specVersion: string;
  readonly kitVersion: string;
  readonly vendors: readonly VendorRecord[];
}

const SPEC_ORDER = new Map(REQUIREMENTS.map((requirement, index) => [requirement.id, index]));

/** Spec order of a case: that of its first requirement, then its id. */
export function compareCases(a: Pick<CaseVerdict, 'id' | 'requirements'>, b: Pick<CaseVerdict, 'id' | 'requirements'>): number {
  const rank = (c: Pick<CaseVerdict, 'requirements'>): number => SPEC_ORDER.get(c.requirements[0] ?? '') ?? SPEC_ORDER.size;
  return rank(a) - rank(b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** The record of one kit report. */
export function recordRun(report: ConformanceReport): RunRecord {
  const { pass, fail, skipped, disabled, error } = report.summary;
  const failures: CaseVerdict[] = [];
  for (const result of report.cases) {
    if (result.status !== 'fail' && result.status !== 'error') continue;
    failures.push({ id: result.id, requirements: [...result.requirements], status: result.status, saw: shorten(result.message ?? '') });
  }
  failures.sort(compareCases);
  return {
    name: report.adapter.name,
    capabilities: report.adapter.capabilities,
    counts: { pass, fail, skipped, disabled, error },
    ok: report.ok,
    failures,
  };
}
