/** Every broken adapter, each the local adapter with exactly one defect. */
import type { BrokenAdapter } from './adapter.js';
import { argumentAdapters } from './arguments.js';
import { backgroundAdapters } from './background.js';
import { backgroundListingAdapters } from './background-listing.js';
import { capabilityAdapters } from './capabilities.js';
import { contractAdapters } from './contract-1-1.js';
import { faultAdapters } from './faults.js';
import { killAndCallbackAdapters } from './kill-and-callbacks.js';
import { largeDataAdapters } from './large-data.js';
import { outputAdapters } from './output.js';
import { processCallAdapters } from './process-calls.js';
import { stallingAdapters } from './stalling.js';
import { stdinAndConcurrencyAdapters } from './stdin-and-concurrency.js';
import { strengthenedAdapters } from './strengthened.js';
import { closeAdapters } from './teardown-close.js';
import { teardownExitAdapters } from './teardown-exits.js';
import { terminalAdapters } from './terminals.js';

export type { BrokenAdapter } from './adapter.js';
export { GRACE_MS, Lab, markedProcesses, MARKER } from './lab.js';

export const BROKEN_ADAPTERS: readonly BrokenAdapter[] = [
  ...processCallAdapters,
  ...argumentAdapters,
  ...capabilityAdapters,
  ...stdinAndConcurrencyAdapters,
  ...teardownExitAdapters,
  ...closeAdapters,
  ...killAndCallbackAdapters,
  ...outputAdapters,
  ...strengthenedAdapters,
  ...contractAdapters,
  ...faultAdapters,
  ...largeDataAdapters,
  ...stallingAdapters,
  ...backgroundAdapters,
  ...backgroundListingAdapters,
  ...terminalAdapters,
];
export { textOnlyLocal } from './contract-1-1.js';
