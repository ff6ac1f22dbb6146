// What the drivers of one sandbox share, and the small pieces of the driver that need none of its state.
import type { ExitStatus } from '@sandstream/types/runtime';
import type { LaunchDefaults } from './launch.js';
import type { OwnerLease } from './owner-lease.js';
import type { ExitStatus as ReportedStatus } from './reports.js';
import type { RetryPolicy } from './retry.js';
import type { RemoteTransport, StartRequest } from './transport.js';

/** What every driver of one sandbox shares. */
export interface RemoteDriverSettings extends LaunchDefaults {
  readonly transport: RemoteTransport;
  /** Bound on one helper command, in ms. */
  readonly requestTimeoutMs: number;
  /** The policy of every repeated helper (kills and sweeps after a broken link or an abandoned start). */
  readonly retry: RetryPolicy;
  /** A short description of a transport's error for messages (default: its message). */
  readonly describe?: (error: unknown) => string;
  /**
   * Run helpers through one long-lived process per account (see `helper-channel.ts`) instead of
   * one {@link RemoteTransport.run} each: for a backend whose every run is a new process start
   * that costs several requests (Docker's exec), while writes to a started process's standard
   * input are cheap. Default false.
   */
  readonly helperChannel?: boolean;
  /**
   * How long a command whose fate became unknown (a start of unknown outcome, a kill not
   * confirmed) is swept again in the background by {@link RemoteCommands}, in ms (default: four
   * `requestTimeoutMs`, at least 60 s). The handle's `sweep()` ends every such sweep.
   */
  readonly lateSweepMs?: number | undefined;
  /** Where background commands' records are made, `${recordBase}${id}` (default `/tmp/.sandstream-`). */
  readonly recordBase?: string | undefined;
  /**
   * Spec 1.4: the owner lease every foreground command's supervisor watches (`owner-lease.ts`);
   * {@link RemoteCommands} makes it. Absent: commands outlive a lost owner.
   */
  readonly lease?: OwnerLease | undefined;
  /**
   * The grace period of the termination sequence (spec 9.8) the driver runs itself, for a
   * foreground command whose link broke (spec 1.4): SIGTERM, this long, then SIGKILL. Default 0.
   */
  readonly graceMs?: number | undefined;
}

export const utf8 = new TextDecoder();

export function statusOf(reported: ReportedStatus | undefined, transport: ExitStatus | undefined): ExitStatus {
  if (reported?.kind === 'code') return { exitCode: reported.code, signal: null };
  if (reported?.kind === 'signal') return { exitCode: null, signal: reported.signal };
  return transport ?? { exitCode: null, signal: null };
}

/** The message of the supervisor's `noexec` report: what could not be run, in the caller's words. */
export function noexecMessage(reason: string, argv0: string | undefined, prlimitPath: string): string {
  const name = JSON.stringify(argv0 ?? '');
  if (reason === 'ENOENT') return `ENOENT: no such executable ${name}`;
  if (reason === 'EACCES') return `EACCES: ${name} is not an executable file`;
  const tool = /^ENOENT (.+)$/.exec(reason)?.[1];
  if (tool === prlimitPath) return `ENOENT: the sandbox has no ${JSON.stringify(tool)}, which resource limits need`;
  if (tool !== undefined) return `ENOENT: the sandbox has no ${JSON.stringify(tool)}, which the supervisor needs`;
  return reason;
}

export function describeStatus(status: ExitStatus | undefined): string {
  if (status === undefined) return 'an end without a status';
  return status.signal !== null ? `death by ${status.signal}` : `exit status ${status.exitCode}`;
}


/** Byte offsets in a background command's record files (`background.ts`). */
export interface Offsets {
  readonly stdout: number;
  readonly stderr: number;
}

/**
 * A driver that reads a background command through followers (spec 1.2,
 * ADR-0036) instead of the supervisor's own streams: the command does not
 * depend on the driver's connection, a broken link is followed again from
 * the bytes already read, and nothing the driver does on its own (a broken
 * link, its release) touches the command.
 */
export interface FollowMode {
  /** The start request of a follower from these offsets of the record's files. */
  readonly follower: (offsets: Offsets) => StartRequest;
  /** Where the first follower starts. */
  readonly from: Offsets;
  /** A follow-only attach: what standard error held before this offset is not delivered (its report frames still count). */
  readonly dropStderrBefore: number;
  /** For a background start: the request that makes the record and starts the supervisor, run once before the first follower. */
  readonly launch?: StartRequest | undefined;
  /** The followers' tag, to sweep one let go before it ended. */
  readonly followerTag: string;
  /**
   * A command on a terminal (spec 1.5): its record, whose `supervisor` names the supervisor that
   * forwards signals to the terminal's whole session, and whose `tty` names the terminal to resize.
   */
  readonly terminalRecord?: string | undefined;
}
