/**
 * The Vercel emulator's process table: every live process of its sandboxes,
 * found by the session and command tags the emulator puts in each
 * command's environment (so descendants that left the process group are
 * found too), on the emulator kit's `/proc` reader.
 */
import { signalAll, taggedProcesses } from '@sandstream/remote/emulator';

/** One row of the emulator's process table. */
export interface EmulatedProcess {
  readonly pid: number;
  readonly ppid: number;
  /** Process group id. */
  readonly pgid: number;
  /** Kernel state letter (`R`, `S`, `T`, ...). */
  readonly state: string;
  /** The emulated session (sandbox) the process belongs to. */
  readonly sessionId: string;
  /** The command whose tree the process is part of. */
  readonly cmdId: string;
  /** The command line, arguments joined by spaces. */
  readonly cmdline: string;
  /** Every `NAME=value` entry of its environment. */
  readonly environ: readonly string[];
}

export const SESSION_VARIABLE = 'VERCEL_EMULATOR_SESSION';
export const COMMAND_VARIABLE = 'VERCEL_EMULATOR_COMMAND';

/** Every live process on this host tagged with an emulated session (one session's, when named). */
export function scanProcesses(sessionId?: string): EmulatedProcess[] {
  const commandPrefix = `${COMMAND_VARIABLE}=`;
  return taggedProcesses(sessionId, SESSION_VARIABLE).map((p) => ({
    pid: p.pid,
    ppid: p.ppid,
    pgid: p.pgrp,
    state: p.state,
    sessionId: p.tag,
    cmdId: p.environ.find((e) => e.startsWith(commandPrefix))?.slice(commandPrefix.length) ?? '',
    cmdline: p.cmdline,
    environ: p.environ,
  }));
}

/** SIGKILL to every live process of the session (as stopping a VM ends everything in it); returns how many were found. */
export function killSession(sessionId: string): number {
  const found = scanProcesses(sessionId);
  signalAll(found.map((p) => p.pid));
  return found.length;
}
