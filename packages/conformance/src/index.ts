/**
 * The Sandstream conformance kit. One engine, three ways in: this
 * programmatic API, `@sandstream/conformance/vitest`, and the
 * `sandstream-conformance` CLI.
 *
 * @packageDocumentation
 */
export { runConformance, runCase, skipReason, isAdvisory, CASES, type ConformanceOptions, type CaseRun, type CaseOutcome } from './engine.js';
export type { ConformanceHooks, OwnerProcess } from './hooks.js';
export type { RunWarning } from './warnings.js';
export type { ConformanceCase } from './case.js';
export type { CaseContext } from './context.js';
export type { LaunchedOwner, OwnerLauncher, OwnerVia } from './owner-launcher.js';
export type { Termination } from './termination-settings.js';
export { autoConcurrency, LOCAL_ROUND_TRIP_MS, REMOTE_CONCURRENCY, runsAlone, SPARE_CORES, type SchedulePlan } from './schedule.js';
export type { CommandCpu } from './machine-cpu.js';
export { ConformanceFailure, HarnessError } from './assert.js';
export { REQUIREMENTS, REQUIREMENTS_SPEC_VERSION, type Requirement, type SpecHeading } from './requirements.js';
export { formatJson } from './reporters/json.js';
export { formatJunit } from './reporters/junit.js';
export { formatTap } from './reporters/tap.js';
export { formatSummary } from './reporters/pretty.js';
export { KIT_VERSION, KIT_SPEC_VERSION } from './version.js';
export type { TesteeCommand } from './testee/link.js';
export { serveTestee, type TesteeModule } from './testee/serve.js';
