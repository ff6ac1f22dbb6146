/** The fields of a `/proc/<pid>/stat` line that process-tree checks need. */
export interface ProcStat {
  /** The state letter: `R`, `S`, `D`, `T`, `Z` (zombie), `X` (dead), ... */
  readonly state: string;
  /** The parent's pid. */
  readonly ppid: number;
  /** The process group. */
  readonly pgrp: number;
}

/**
 * Parses the text of a Linux `/proc/<pid>/stat` file. The command name is
 * parenthesised and may itself hold spaces and parentheses, so the fields
 * are counted from the last `)`. Reading the file is the caller's part
 * (which `/proc`, and what a vanished process means, differ by caller).
 */
export function parseProcStat(stat: string): ProcStat {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ', 3);
  return { state: fields[0] ?? '', ppid: Number(fields[1]), pgrp: Number(fields[2]) };
}

/** True for the state of a process that has not exited: neither zombie (`Z`) nor dead (`X`). */
export function isRunningState(state: string): boolean {
  return state !== '' && state !== 'Z' && state !== 'X';
}
