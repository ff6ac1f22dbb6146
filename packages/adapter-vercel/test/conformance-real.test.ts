/**
 * The full conformance kit against real Vercel Sandbox, when credentials
 * are set (VERCEL_TOKEN + VERCEL_TEAM_ID + VERCEL_PROJECT_ID, or
 * VERCEL_OIDC_TOKEN). Without them the suite is skipped and says why.
 */
import { describe, it } from 'vitest';
import { describeConformance } from '@sandstream/conformance/vitest';
import createSandbox, { conformanceHooks, credentialsFromEnv } from '../src/conformance.js';

const credentials = credentialsFromEnv();

if (credentials === undefined) {
  const reason =
    'real Vercel conformance skipped: no credentials (set VERCEL_TOKEN, VERCEL_TEAM_ID and VERCEL_PROJECT_ID, or VERCEL_OIDC_TOKEN)';
  console.log(reason);
  describe('Sandstream conformance on real Vercel Sandbox', () => {
    it.skip(reason, () => undefined);
  });
} else {
  describeConformance({
    factory: () => createSandbox(),
    hooks: conformanceHooks,
    // Every case creates a microVM and pays network round trips.
    caseTimeoutMs: 120_000,
  });
}
