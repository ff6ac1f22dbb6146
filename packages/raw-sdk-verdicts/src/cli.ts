#!/usr/bin/env node
/**
 * `npm run verdicts -w @sandstream/raw-sdk-verdicts`: runs the kit on each
 * vendor's raw SDK and on its adapter, writes the record
 * (`packages/raw-sdk-verdicts/verdicts.json`) and the page
 * (`docs/raw-sdk-verdicts.md`).
 *
 *   --render          rewrite the page from the committed record, running nothing
 *   --vendor <id>     run only that vendor, keeping the others' records
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KIT_SPEC_VERSION, KIT_VERSION } from '@sandstream/conformance';
import { PAGE_PATH, PageError, RECORD_PATH, renderPage } from './page.js';
import { recordRun, type VendorRecord, type VerdictsRecord } from './record.js';
import { runKit } from './run.js';
import { installedVersion, type Side, type Vendor } from './vendor.js';
import { VENDORS } from './vendors.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

function usage(message: string): never {
  process.stderr.write(`${message}\nusage: node dist/cli.js [--render] [--vendor ${VENDORS.map((v) => v.id).join('|')}]\n`);
  process.exit(2);
}

function parse(args: readonly string[]): { render: boolean; only: Vendor | undefined } {
  let render = false;
  let only: Vendor | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--render') render = true;
    else if (arg === '--vendor') {
      const id = args[++i];
      only = VENDORS.find((v) => v.id === id);
      if (only === undefined) usage(`--vendor: no vendor ${JSON.stringify(id)}`);
    } else usage(`unknown argument ${JSON.stringify(arg)}`);
  }
  if (render && only !== undefined) usage('--render runs nothing: it takes no --vendor');
  return { render, only };
}

function readRecord(): VerdictsRecord | undefined {
  try {
    return JSON.parse(readFileSync(join(ROOT, RECORD_PATH), 'utf8')) as VerdictsRecord;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

async function runSide(vendor: Vendor, side: Side) {
  const started = performance.now();
  const report = await runKit(vendor.open(side));
  const run = recordRun(report);
  const { pass, fail, skipped, error } = run.counts;
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  process.stdout.write(`  ${side.padEnd(7)} ${run.name.padEnd(10)} ${pass} passed, ${fail} failed, ${skipped} skipped, ${error} errors (${seconds} s)\n`);
  return run;
}

async function runVendor(vendor: Vendor): Promise<VendorRecord> {
  process.stdout.write(`${vendor.title}\n`);
  const raw = await runSide(vendor, 'raw');
  const control = await runSide(vendor, 'adapter');
  return { id: vendor.id, sdk: vendor.sdk, sdkVersion: installedVersion(vendor.sdk), adapter: vendor.adapter, raw, control };
}

async function main(): Promise<void> {
  const { render, only } = parse(process.argv.slice(2));
  const started = performance.now();
  let record = readRecord();
  if (!render) {
    const previous = new Map((record?.vendors ?? []).map((v) => [v.id, v]));
    const vendors: VendorRecord[] = [];
    for (const vendor of VENDORS) {
      const kept = previous.get(vendor.id);
      if (only !== undefined && vendor !== only) {
        if (kept === undefined) usage(`the record has no run of ${vendor.id} to keep: run every vendor once`);
        vendors.push(kept);
      } else vendors.push(await runVendor(vendor));
    }
    record = { specVersion: KIT_SPEC_VERSION, kitVersion: KIT_VERSION, vendors };
  } else if (record === undefined) {
    usage(`--render: there is no record at ${RECORD_PATH} yet`);
  }
  // The record first: a run of minutes is kept even when the page cannot be written from it yet.
  if (!render) writeFileSync(join(ROOT, RECORD_PATH), `${JSON.stringify(record, null, 2)}\n`);
  let page: string;
  try {
    page = renderPage(record, VENDORS);
  } catch (error) {
    if (!(error instanceof PageError)) throw error;
    process.stderr.write(`${error.message}\nthe page was not written${render ? '' : ' (the record was)'}; once that is fixed, npm run verdicts -w @sandstream/raw-sdk-verdicts -- --render\n`);
    process.exit(1);
  }
  writeFileSync(join(ROOT, PAGE_PATH), page);
  process.stdout.write(`wrote ${render ? '' : `${RECORD_PATH} and `}${PAGE_PATH} in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
}

await main();
