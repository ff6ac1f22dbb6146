// Locations the tests read, resolved from this file so the working directory does not matter.
import { fileURLToPath } from 'node:url';
import { SPEC_VERSION } from '../src/version.js';

/** The repository root. */
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** `spec/<version>/` of a revision. */
export function specDir(version: string): string {
  return fileURLToPath(new URL(`../../../spec/${version}/`, import.meta.url));
}
/** `spec/<version>/` of the version this package implements. */
export const SPEC_DIR = specDir(SPEC_VERSION);
/** Every published revision, oldest first; each directory is frozen once a later one exists. */
export const SPEC_VERSIONS = ['1.0', '1.1', '1.2', '1.3', '1.4', '1.5'] as const;
/** The decision records. */
export const ADR_DIR = fileURLToPath(new URL('../../../adrs/', import.meta.url));
