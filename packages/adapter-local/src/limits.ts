import { findUtility } from './utilities.js';

/** Finds util-linux's `prlimit`, which sets rlimits on the command it execs. */
export function findPrlimit(): string | undefined {
  return findUtility('prlimit');
}
