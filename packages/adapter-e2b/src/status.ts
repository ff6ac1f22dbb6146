/**
 * envd's vocabulary for how a process ended: the status strings of its end
 * events. The driver decodes them; the emulator writes them.
 */
import { constants } from 'node:os';
import type { ExitStatus } from '@sandstream/types/runtime';

/**
 * The words the daemon uses for a signal in an end event's status, as Go's
 * `syscall.Signal.String()` prints them ("signal: killed").
 */
const SIGNAL_WORDS: Readonly<Record<string, string>> = {
  SIGHUP: 'hangup',
  SIGINT: 'interrupt',
  SIGQUIT: 'quit',
  SIGILL: 'illegal instruction',
  SIGTRAP: 'trace/breakpoint trap',
  SIGABRT: 'aborted',
  SIGBUS: 'bus error',
  SIGFPE: 'floating point exception',
  SIGKILL: 'killed',
  SIGUSR1: 'user defined signal 1',
  SIGSEGV: 'segmentation fault',
  SIGUSR2: 'user defined signal 2',
  SIGPIPE: 'broken pipe',
  SIGALRM: 'alarm clock',
  SIGTERM: 'terminated',
  SIGXCPU: 'CPU time limit exceeded',
  SIGXFSZ: 'file size limit exceeded',
  SIGSYS: 'bad system call',
};

/** What an end event carries for a command that ended with `code` or `signal`. */
export interface EndFields {
  readonly exitCode: number;
  readonly exited: boolean;
  readonly status: string;
  readonly error: string | undefined;
}

/** The end event of a reaped command, as the daemon reports it. */
export function endFields(code: number | null, signal: NodeJS.Signals | null): EndFields {
  if (signal !== null) {
    const word = SIGNAL_WORDS[signal] ?? `signal ${constants.signals[signal] ?? signal}`;
    const status = `signal: ${word}`;
    return { exitCode: -1, exited: false, status, error: status };
  }
  const exitCode = code ?? -1;
  const status = `exit status ${exitCode}`;
  return { exitCode, exited: true, status, error: exitCode === 0 ? undefined : status };
}

/** The signal name for a status string such as "signal: killed", or null. */
export function signalFromStatus(status: string): string | null {
  const match = /^signal: (.+?)(?: \(core dumped\))?$/.exec(status);
  if (match === null) return null;
  for (const [name, word] of Object.entries(SIGNAL_WORDS)) if (word === match[1]) return name;
  const numbered = /^signal (\d+)$/.exec(match[1]!);
  if (numbered !== null) {
    for (const [name, number] of Object.entries(constants.signals)) if (number === Number(numbered[1])) return name;
  }
  return null;
}

/**
 * The exit status of an end event. envd reports a death by signal as exit
 * code -1 and a status such as "signal: killed"; an unknown word would be a
 * newer envd's, and SIGKILL, the only signal envd itself sends, is the
 * reading least likely wrong.
 */
export function exitStatusOf(end: { readonly exitCode: number; readonly exited: boolean; readonly status: string }): ExitStatus {
  if (end.exited) return { exitCode: end.exitCode, signal: null };
  return { exitCode: null, signal: signalFromStatus(end.status) ?? 'SIGKILL' };
}
