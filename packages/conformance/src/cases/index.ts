import type { ConformanceCase } from '../case.js';
import { argumentCases } from './arguments.js';
import { capabilityCases } from './capabilities.js';
import { outputCases } from './output.js';
import { stdinCases } from './stdin.js';
import { streamCases } from './stream.js';
import { closeCases } from './teardown.js';
import { teardownCases } from './teardown-process.js';

/** Every case of this kit, in report order. */
export const CASES: readonly ConformanceCase[] = Object.freeze([
  ...streamCases,
  ...capabilityCases,
  ...argumentCases,
  ...teardownCases,
  ...closeCases,
  ...outputCases,
  ...stdinCases,
]);
