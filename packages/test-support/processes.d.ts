/** A process found by its marker. */
export interface MarkedProcess {
  readonly pid: number;
  readonly cmdline: string;
}
/** The fields of `/proc/<pid>/stat` after the command name: [state, ppid, pgrp, session, ...]; undefined once the process is gone. */
export declare function procStat(pid: number): string[] | undefined;
/** The state letter of a process (`R`, `S`, `Z`, ...), or undefined once it is gone. */
export declare function procState(pid: number): string | undefined;
/** True while the process exists and is not a zombie (or dead). */
export declare function isLive(pid: number): boolean;
/** Resolves once a process that is not this one's child has ended (polling /proc); rejects naming its state after `ms`. */
export declare function ended(pid: number, ms: number, what?: string): Promise<void>;
/** Live processes other than this one whose environment has `name=value` (or, with `prefix`, a value starting with it). */
export declare function markedProcesses(name: string, value: string, options?: { prefix?: boolean }): MarkedProcess[];
/** Signals each process by pid; one that ended between its listing and the signal is no error. */
export declare function killEach(processes: Iterable<{ readonly pid: number }>, signal?: NodeJS.Signals): void;
