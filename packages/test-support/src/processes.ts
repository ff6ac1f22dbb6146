// Finds the processes a test run started, by a marker variable in their
// environment, for the suites that check that nothing they start outlives
// them. The reading of /proc is the runtime's (@sandstream/types/runtime);
// these are the shapes the tests were written against.
import { isLiveProcess, markedProcesses as marked, readProcStat, readProcStatFields, signalEach } from '@sandstream/types/runtime';

/** A process found by its marker. */
export interface MarkedProcess {
  readonly pid: number;
  readonly cmdline: string;
}

/**
 * The fields of `/proc/<pid>/stat` after the parenthesised command name:
 * [state, ppid, pgrp, session, ...] (19: the start time); undefined once the
 * process is gone.
 */
export function procStat(pid: number): string[] | undefined {
  return readProcStatFields(pid);
}

/** The state letter of a process (`R`, `S`, `Z`, ...), or undefined once it is gone. */
export function procState(pid: number): string | undefined {
  return readProcStat(pid)?.state;
}

/** True while the process exists and is not a zombie (or dead). */
export function isLive(pid: number): boolean {
  return isLiveProcess(pid);
}

/**
 * Resolves once a process that is not this one's child (so no exit event
 * reaches us) has ended, polling /proc; rejects naming its last state after
 * `ms`. For a process already sent SIGKILL: the signal is delivered when the
 * kernel next runs it, which on a loaded machine is not at once.
 */
export async function ended(pid: number, ms: number, what = `process ${pid}`): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (!isLive(pid)) return;
    if (Date.now() >= deadline) throw new Error(`${what} was still live (state ${procState(pid)}) ${ms} ms on`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * Live processes other than this one whose environment has `name=value`;
 * with `prefix`, any value starting with `value`.
 */
export function markedProcesses(name: string, value: string, { prefix = false }: { prefix?: boolean } = {}): MarkedProcess[] {
  return marked(name, value, { prefix }).map(({ pid, cmdline }) => ({ pid, cmdline }));
}

/** Signals each process by pid; one that ended between its listing and the signal is no error. */
export function killEach(processes: Iterable<{ readonly pid: number }>, signal: NodeJS.Signals = 'SIGKILL'): void {
  signalEach([...processes].map((p) => p.pid), signal);
}
