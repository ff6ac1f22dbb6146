/**
 * `@sandstream/remote`: what every exec-style remote adapter shares
 * (ADR-0033). Today the in-sandbox supervisor and the parser of its
 * in-band reports.
 *
 * @packageDocumentation
 */
export { FORWARDED_SIGNALS, SUPERVISOR, SUPERVISOR_NAME, TAG_VARIABLE, supervisorArgv } from './supervisor.js';
export type { SupervisorCommand } from './supervisor.js';
export { ReportSplitter, SupervisorReportError, parseReport } from './reports.js';
export type { ExitReport, ExitStatus, GoneReport, NoExecReport, SplitResult, StartReport, SupervisorReport } from './reports.js';
