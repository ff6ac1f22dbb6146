/**
 * What exec inspect's one number, `ExitCode`, says about an exec's end.
 */
import { constants } from 'node:os';
import type { ExitStatus } from '@sandstream/types/runtime';

const SIGNAL_NAMES = new Map<number, string>(Object.entries(constants.signals).map(([name, number]) => [number, name]));

/**
 * The exec's end from its one number. The driver reads the supervisor's
 * exact report first and takes this only when the supervisor gave none,
 * which happens when it was killed: so 128+n is read as death by signal n
 * (what containerd reports for it).
 */
export function execStatus(exitCode: number | null | undefined): ExitStatus | undefined {
  if (typeof exitCode !== 'number') return undefined;
  const signal = exitCode > 128 ? SIGNAL_NAMES.get(exitCode - 128) : undefined;
  return signal === undefined ? { exitCode, signal: null } : { exitCode: null, signal };
}

/** Exec's exit code for a process the runtime could not start (`OCI runtime exec failed`). */
export const START_FAILED: ReadonlySet<number> = new Set([126, 127]);
