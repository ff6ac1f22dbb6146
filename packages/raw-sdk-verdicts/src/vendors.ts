/**
 * The vendors the verdicts page judges, in page order. A vendor is a
 * `raw-*.ts` wrapper of its client library, a `*-vendor.ts` whose `open()`
 * reaches the backend its adapter's tests use, its entry below, and its
 * explanations in `explanations.ts`. The runner, the record and the page
 * take every vendor alike.
 */
import { DOCKER } from './docker-vendor.js';
import { E2B } from './e2b-vendor.js';
import { VERCEL } from './vercel-vendor.js';
import type { Vendor } from './vendor.js';

export const VENDORS: readonly Vendor[] = [E2B, VERCEL, DOCKER];
