import type { ConformanceCase } from '../case.js';
import { terminationSettingsCases } from './2.1-sandbox.js';
import { processCases } from './2.2-process.js';
import { argvDeliveryCases, invalidArgvCases } from './3.1-argv.js';
import { optionsCases } from './3.2-options.js';
import { environmentCases } from './3.3-environment-and-working-directory.js';
import { manifestCases } from './4.1-capabilities-of-1-5.js';
import { negativeBehaviourCases } from './4.2-negative-behaviour.js';
import { outputCapCases } from './5.1-output-cap.js';
import { onOutputCases } from './5.2-on-output.js';
import { streamCases } from './6-stream-and-the-process.js';
import { startCases } from './6.1-start.js';
import { iterationCases, unreadOutputCases } from './6.2-iteration.js';
import { waitCases } from './6.3-wait.js';
import { stdinCases } from './6.4-standard-input.js';
import { orderingCases } from './7-ordering.js';
import { byteExactCases } from './8.1-byte-exact-output.js';
import { textOnlyCases } from './8.2-text-only-backends.js';
import { disposalCases } from './9.2-disposal.js';
import { leavingLoopCases } from './9.3-leaving-a-loop.js';
import { abortSignalCases } from './9.4-abort-signal.js';
import { timeoutCases } from './9.5-timeout.js';
import { closeCases } from './9.6-sandbox-close.js';
import { processTreeCases } from './9.7-process-tree.js';
import { terminationSequenceCases } from './9.8-termination-sequence.js';
import { callerSignalCases } from './9.9-independence-from-the-callers-signal.js';
import { safetyNetCases } from './9.10-safety-net.js';
import { ownerLossCases } from './9.11-owner-loss.js';
import { resultCases } from './10-exec-result-and-exit-status.js';
import { concurrencyCases } from './11-concurrency.js';
import { limitsCases } from './12.1-resource-limits.js';
import { userCases } from './12.2-user.js';
import { terminalCases } from './12.3-terminals.js';
import { backgroundCases } from './13.1-background-commands.js';
import { attachCases } from './13.2-attach.js';
import { reconnectCases } from './13.4-reconnect.js';

/**
 * Every case of this kit, in report order.
 *
 * Each file holds the cases of one section of the spec and is named after
 * its heading, number then title (`9.8-termination-sequence.ts` holds the
 * cases of "9.8 The termination sequence"). A case's section is the heading
 * its first requirement is tagged under in spec.md (`caseSection` in
 * `sections.ts`); `test/sections.test.ts` holds every file to that. Helpers
 * and fixture scripts that cases of several sections share live in
 * `support/`.
 *
 * The report order is older than this layout and is kept as it was, so a
 * section whose cases are not all side by side in it (3.1, 6.2) exports them
 * in two lists.
 */
export const CASES: readonly ConformanceCase[] = Object.freeze([
  ...streamCases,
  ...iterationCases,
  ...startCases,
  ...processCases,
  ...manifestCases,
  ...textOnlyCases,
  ...negativeBehaviourCases,
  ...invalidArgvCases,
  ...optionsCases,
  ...argvDeliveryCases,
  ...environmentCases,
  ...disposalCases,
  ...leavingLoopCases,
  ...abortSignalCases,
  ...timeoutCases,
  ...processTreeCases,
  ...terminationSequenceCases,
  ...callerSignalCases,
  ...safetyNetCases,
  ...closeCases,
  ...terminationSettingsCases,
  ...orderingCases,
  ...byteExactCases,
  ...waitCases,
  ...unreadOutputCases,
  ...resultCases,
  ...outputCapCases,
  ...onOutputCases,
  ...stdinCases,
  ...concurrencyCases,
  ...limitsCases,
  ...userCases,
  // Spec 1.2 (ADR-0036).
  ...backgroundCases,
  ...attachCases,
  ...reconnectCases,
  // Spec 1.4 (ADR-0050).
  ...ownerLossCases,
  // Spec 1.5 (ADR-0052).
  ...terminalCases,
]);
