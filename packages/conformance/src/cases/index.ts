import type { ConformanceCase } from '../case.js';
import { argumentCases } from './arguments.js';
import { attachCases } from './attach.js';
import { backgroundCases } from './background.js';
import { reconnectCases } from './reconnect.js';
import { bytesCases } from './bytes.js';
import { capabilityCases } from './capabilities.js';
import { concurrencyCases } from './concurrency.js';
import { environmentCases } from './environment.js';
import { flowCases } from './flow.js';
import { limitsCases } from './limits.js';
import { orderingCases } from './ordering.js';
import { outputCapCases } from './output-cap.js';
import { processCases } from './process.js';
import { resultCases } from './result.js';
import { startCases } from './start.js';
import { stdinCases } from './stdin.js';
import { streamCases } from './stream.js';
import { closeCases } from './teardown.js';
import { teardownCases } from './teardown-process.js';
import { terminationCases } from './termination.js';
import { userCases } from './user.js';
import { waitCases } from './wait.js';

/**
 * Every case of this kit, in report order. Each file holds the cases of one
 * group, named as their ids begin (`stdin.ts`: `stdin.*`); `teardown.ts`
 * holds `Sandbox.close()`, `teardown-process.ts` the teardown of a Process (its timed termination sequence in
 * `teardown-sequence.ts`).
 * Helpers the cases share live in `support/`.
 */
export const CASES: readonly ConformanceCase[] = Object.freeze([
  ...streamCases,
  ...startCases,
  ...processCases,
  ...capabilityCases,
  ...argumentCases,
  ...environmentCases,
  ...teardownCases,
  ...closeCases,
  ...terminationCases,
  ...orderingCases,
  ...bytesCases,
  ...waitCases,
  ...flowCases,
  ...resultCases,
  ...outputCapCases,
  ...stdinCases,
  ...concurrencyCases,
  ...limitsCases,
  ...userCases,
  // Spec 1.2 (ADR-0036).
  ...backgroundCases,
  ...attachCases,
  ...reconnectCases,
]);
