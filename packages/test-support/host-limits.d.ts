/** Limits of {@link limitSelf}; each undefined one is left as it is. */
export interface HostLimits {
  /** RLIMIT_NOFILE's soft limit. */
  readonly openFiles?: number;
  /** Tasks (processes and threads) this uid may add to those it owns now: RLIMIT_NPROC's soft limit. */
  readonly processes?: number;
}
/**
 * The argv that runs `argv` as a uid that owns no task when this process is root (root is exempt
 * from RLIMIT_NPROC), else `argv` itself, with what to change in its environment (`env`: HOME);
 * `{ skip }` with the reason when setpriv is missing.
 *
 * @example const run = asUnusedUid([process.execPath, 'flood.mjs']); if ('argv' in run) spawn(run.argv[0]!, run.argv.slice(1), { env: { ...process.env, ...run.env } });
 */
export declare function asUnusedUid(
  argv: readonly string[],
): { readonly argv: string[]; readonly uid: number | undefined; readonly env: Readonly<Record<string, string>> } | { readonly skip: string };
/** Why {@link limitSelf} cannot work in this process, or undefined. */
export declare function limitSelfUnavailable(limits?: HostLimits): string | undefined;
/**
 * Lowers this process's soft limits through prlimit on its own pid, run by a helper shell started
 * first (kept until {@link liftSelfLimits}: call it before the end); resolves with the limits set
 * (`processes` as the absolute RLIMIT_NPROC). Throws with the reason {@link limitSelfUnavailable} gives.
 *
 * @example await limitSelf({ openFiles: 160 }); // then start more commands than fit
 */
export declare function limitSelf(limits?: HostLimits): Promise<{ openFiles?: number; processes?: number }>;
/** Raises this process's soft limits back to the hard ones (working even with no descriptor left) and ends the helper {@link limitSelf} started. */
export declare function liftSelfLimits(): Promise<void>;
/** This process's soft limits of descriptors and processes (`unlimited` or a number, as text). */
export declare function softLimits(): { readonly openFiles: string; readonly processes: string };
/** What one step of {@link runOutOfDescriptors} gave. */
export type StepOutcome = { readonly ok: unknown } | { readonly error: string; readonly code: string | undefined; readonly message: string };
/**
 * Runs this process out of descriptors (a low limit through {@link limitSelf}, then every
 * descriptor left held) under a remote adapter's sandbox, two commands waiting for input: what a
 * write, a start, and both commands once there is room again, gave.
 *
 * @example const report = await runOutOfDescriptors(sandbox); // report.write: { error: 'TransportError', ... }
 */
export declare function runOutOfDescriptors(sandbox: import('@sandstream/types').Sandbox): Promise<{
  readonly write: StepOutcome;
  readonly start: StepOutcome;
  readonly kept: StepOutcome;
  readonly ends: readonly StepOutcome[];
  readonly read: readonly string[];
  readonly after: StepOutcome;
}>;
/**
 * Runs `argv` (a script that prints one JSON document) as a child process, SIGKILLed after
 * `boundMs` (default 120 s): its exit status, the parsed document (undefined when not JSON), its stderr.
 *
 * @example const { code, report } = await runJsonChild([process.execPath, 'fixture.mjs']);
 */
export declare function runJsonChild<T = unknown>(
  argv: readonly string[],
  options?: { readonly env?: NodeJS.ProcessEnv; readonly boundMs?: number },
): Promise<{ readonly code: number | null; readonly report: T | undefined; readonly stderr: string }>;
