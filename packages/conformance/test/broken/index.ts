/** Every broken adapter, each the local adapter with exactly one defect. */
import type { BrokenAdapter } from './adapter.js';
import { backgroundAdapters } from './background.js';
import { callAdapters } from './calls.js';
import { contractAdapters } from './contract-1-1.js';
import { faultAdapters } from './faults.js';
import { largeDataAdapters } from './large-data.js';
import { outputAdapters } from './output.js';
import { stallingAdapters } from './stalling.js';
import { strengthenedAdapters } from './strengthened.js';
import { teardownAdapters } from './teardown.js';

export type { BrokenAdapter } from './adapter.js';
export { GRACE_MS, Lab, markedProcesses, MARKER } from './lab.js';

export const BROKEN_ADAPTERS: readonly BrokenAdapter[] = [
  ...callAdapters,
  ...teardownAdapters,
  ...outputAdapters,
  ...strengthenedAdapters,
  ...contractAdapters,
  ...faultAdapters,
  ...largeDataAdapters,
  ...stallingAdapters,
  ...backgroundAdapters,
];
export { textOnlyLocal } from './contract-1-1.js';
