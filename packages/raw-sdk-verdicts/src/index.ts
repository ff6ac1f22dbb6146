/**
 * What an adapter adds, shown: each vendor's own command API behind the
 * contract with no fix of ours, the kit run on it and on the project's
 * adapter over the same backend, and the page that lists what fails and why.
 *
 * @packageDocumentation
 */
export { createRawDockerSandbox, type RawDockerOptions } from './raw-docker.js';
export { createRawE2BSandbox, type RawE2BOptions } from './raw-e2b.js';
export { createRawVercelSandbox, type RawVercelOptions } from './raw-vercel.js';
export { shellLine } from './shell-line.js';
export { installedVersion, type KitTarget, type Side, type Vendor } from './vendor.js';
export { VENDORS } from './vendors.js';
export { runKit, RUN_CONCURRENCY } from './run.js';
export { EXPLANATIONS, explanationKeys, familyOf, type Explanations } from './explanations.js';
export { compareCases, recordRun, type CaseVerdict, type Counts, type RunRecord, type VendorRecord, type VerdictsRecord } from './record.js';
export { PAGE_PATH, PageError, RECORD_PATH, renderPage, summaryLine } from './page.js';
export { MAX_SAW, shorten } from './shorten.js';
