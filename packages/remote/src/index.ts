/**
 * `@sandstream/remote`: what every exec-style remote adapter shares
 * (ADR-0033): the in-sandbox supervisor and the parser of its reports, the
 * transport interface a backend implements, the driver over it, the helper
 * commands, and the one retry policy.
 *
 * @packageDocumentation
 */
export { FORWARDED_SIGNALS, SUPERVISOR, SUPERVISOR_NAME, TAG_VARIABLE, supervisorArgv } from './supervisor.js';
export type { SupervisorCommand, SupervisorLease, SupervisorTerminal } from './supervisor.js';
export { ReportSplitter, SupervisorReportError, parseReport } from './reports.js';
export type { ExitReport, ExitStatus, GoneReport, HeldReport, LostReport, NoExecReport, SplitResult, StartReport, SupervisorReport } from './reports.js';
export type { HelperOptions, HelperResult, RemoteTransport, StartRequest, TransportEnd, TransportProcess, TransportSink } from './transport.js';
export { RemoteDriver, type FollowMode, type RemoteDriverSettings } from './driver.js';
export type { Offsets } from './driver-settings.js';
export { RemoteCommands, type RemoteCommandsOptions } from './commands.js';
export { DEFAULT_OWNER_LEASE, OWNER_LOSS_MARGIN_MS, ownerLeaseTimes, ownerLossMs, type OwnerLeaseTimes } from './owner-lease.js';
export { RemoteBackground, type BackgroundHandle } from './background-commands.js';
export { severFollowers, severLinks } from './following.js';
export { BACKGROUND, BACKGROUND_NAME, DEFAULT_RECORD_BASE, FOLLOWER, FOLLOWER_NAME, RECORDS, RECORDS_NAME, recordBaseOption } from './background.js';
export { CHANNEL_NAME } from './helper-channel.js';
export { DEFAULT_PATHS, launchRequest, type LaunchDefaults, type LaunchPaths } from './launch.js';
export { HELPER, HELPER_NAME, abandonArgv, groupSignalArgv, processSignalArgv, leaseArgv, sweepArgv, treeKillArgv, type GroupIdentity } from './helpers.js';
export { DEFAULT_RETRY, backoffMs, parseRetryAfter, retry, type Attempt, type RetryOptions, type RetryPolicy } from './retry.js';
export { checkRemoteOptions, defineRemoteSandbox, REMOTE_OPTION_KEYS, type RemoteSandboxDefinition, type RemoteSandboxOptions, type RemoteTransportSettings } from './remote-sandbox.js';
export { STDIN_HELD, STDIN_PROBE, STDIN_PROBE_NAME, stdinHeld, stdinProbeArgv, untilWritten } from './stdin-probe.js';
