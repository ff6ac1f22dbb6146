// Locations the tests read, resolved from this file so the working directory does not matter.
import { fileURLToPath } from 'node:url';
import { SPEC_VERSION } from '../src/version.js';

/** The repository root. */
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** `spec/<version>/` of the version this package implements. */
export const SPEC_DIR = fileURLToPath(new URL(`../../../spec/${SPEC_VERSION}/`, import.meta.url));
/** The decision records. */
export const ADR_DIR = fileURLToPath(new URL('../../../adrs/', import.meta.url));
