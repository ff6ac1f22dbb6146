/**
 * `@sandstream/host-limits`: this host's resources cut short for a
 * process, few file descriptors (RLIMIT_NOFILE) and few processes
 * (RLIMIT_NPROC), for the tests and soak runs that prove an adapter turns
 * running out of them into typed errors. Linux only, through util-linux's
 * prlimit (and setpriv, to run a program as another uid where this process
 * is root, which RLIMIT_NPROC exempts).
 *
 * @packageDocumentation
 */
export { asUnusedUid, tasksByUid, type OtherUidRun } from './other-uid.js';
export { liftSelfLimits, limitSelf, limitSelfUnavailable, softLimits, type HostLimits, type LimitsSet } from './self-limits.js';
