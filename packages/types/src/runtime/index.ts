/**
 * The shared Process runtime. Adapter authors implement a
 * {@link ProcessDriver} for their backend and hand it to
 * {@link defineSandbox}; queueing, backpressure, timeouts, abort, teardown
 * and results come from here, identical for every adapter.
 *
 * @packageDocumentation
 */
export type { DriverEvents, ExitStatus, ProcessDriver, StartedProcess } from './driver.js';
export {
  defineSandbox,
  driverOf,
  DEFAULT_GRACE_MS,
  DEFAULT_HIGH_WATER_MARK,
  DEFAULT_KILL_WAIT_MS,
  type SandboxBackend,
} from './define-sandbox.js';
export type { CommandSpec, ExecutionPlan } from './execution-plan.js';

export { inheritedEnv, validateEnv } from './environment.js';
export { isPlainObject } from './plain-object.js';
export { Capture } from './capture.js';
export type { BackgroundBackend, FollowedCommand, StreamCounts } from './background-backend.js';
export {
  descendants,
  groupMembers,
  isLiveProcess,
  isRunningState,
  listPids,
  liveProcesses,
  markedProcesses,
  parseProcStat,
  readProcArgv,
  readProcStat,
  readProcStatFields,
  readProcStatus,
  signalEach,
  someProcess,
  type MarkedProcess,
  type MarkedProcessesOptions,
  type ProcessScanOptions,
  type ProcessEntry,
  type ProcStat,
  type ProcStatus,
} from './process-table.js';
export { TIMED_OUT, within } from './timers.js';
export { capabilitiesOption, checkOptionKeys, nonNegativeOption } from './options-check.js';
export { prlimitArgs } from './limits.js';
