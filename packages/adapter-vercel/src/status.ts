/**
 * The Vercel API's exit status: one number, an exit code or 128 + the
 * signal number when a signal ended the command (the shell's convention).
 * The supervisor reports the command's exact status in band (ADR-0033);
 * this reading is the fallback for a supervisor that reported none.
 */
import { constants } from 'node:os';
import type { ExitStatus } from '@sandstream/types/runtime';

const SIGNAL_NAMES = new Map<number, string>(Object.entries(constants.signals as Record<string, number>).map(([name, number]) => [number, name]));

/** A status of 129-192 that names a known signal is read as that signal (ADR-0027). */
export function decodeStatus(code: number): ExitStatus {
  if (code > 128 && code <= 128 + 64) {
    const name = SIGNAL_NAMES.get(code - 128);
    if (name !== undefined) return { exitCode: null, signal: name };
  }
  return { exitCode: code, signal: null };
}

/** The number of a signal name (`SIGTERM`), as the API's kill takes it. */
export function signalNumber(name: string): number | undefined {
  return (constants.signals as Record<string, number>)[name];
}
