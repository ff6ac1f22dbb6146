/**
 * How the owner process of `owner.crash` (spec 1.4, SS-OWNER-1) reaches a
 * run's backend: the kit starts a Node.js process that loads
 * {@link OWNER_MODULE}, and this variable, JSON, says which vendor, which
 * side, and where the case's sandbox lives. The owner process makes its
 * sandbox there exactly as the run's own factory makes one, so each side is
 * judged by what it does itself when its owner dies.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Side } from './vendor.js';

/** The environment variable that carries an {@link OwnerJoin}. */
export const OWNER_VARIABLE = 'SANDSTREAM_VERDICTS_OWNER';

/** The module an owner process loads: this package's built `owner.js` (from the sources too, as the kit loads only JavaScript). */
export const OWNER_MODULE = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'owner.js');

/** Where an owner process finds the case's sandbox, per vendor. */
export type OwnerJoin =
  | { readonly vendor: 'e2b'; readonly side: Side; readonly url: string; readonly recordBase: string }
  | {
      readonly vendor: 'vercel';
      readonly side: Side;
      readonly name: string;
      readonly url: string;
      readonly credentials: { readonly token: string; readonly teamId: string; readonly projectId: string };
      readonly recordBase: string;
    }
  | { readonly vendor: 'docker'; readonly side: Side; readonly socketPath: string; readonly container: string };

/** The kit's `owner` hook's answer for a join. */
export function ownerProcess(how: OwnerJoin): { module: string; env: Record<string, string> } {
  return { module: OWNER_MODULE, env: { [OWNER_VARIABLE]: JSON.stringify(how) } };
}
