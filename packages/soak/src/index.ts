/**
 * The soak and chaos runner: `runSoak(options)` runs planned processes
 * through one adapter and returns a report whose `violations` list every
 * broken promise; `formatReport` prints it.
 *
 * @packageDocumentation
 */
export { runSoak, type SoakOptions, type ResourceSnapshot } from './runner.js';
export { formatReport, type SoakReport, type Violation } from './report.js';
export { planProcess, planDigest, planCapabilities, behavioursFor, endingsFor, type ProcessPlan, type PlanCapabilities } from './plan.js';
export { BEHAVIOURS, type BehaviourName, type CommandPlan } from './behaviours.js';
export { BACKGROUND_ENDINGS, ENDINGS, type BackgroundEndingName, type EndingName, type EndingPlan } from './endings.js';
export { ADAPTERS, MARKER, type AdapterName } from './targets.js';
export { Rng } from './random.js';
export { percentiles, percentile, type Percentiles } from './stats.js';
