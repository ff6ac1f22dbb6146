/** A process found by its marker. */
export interface MarkedProcess {
  readonly pid: number;
  readonly cmdline: string;
}
/** True while the process exists and is not a zombie (or dead). */
export declare function isLive(pid: number): boolean;
/** Live processes other than this one whose environment has `name=value` (or, with `prefix`, a value starting with it). */
export declare function markedProcesses(name: string, value: string, options?: { prefix?: boolean }): MarkedProcess[];
