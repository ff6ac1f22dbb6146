/**
 * The processes that run the adapter under test: the kit's own, and each
 * testee's (its hello states its pid). A command id or pid equal to one of
 * them names the adapter's host, not a command, and the cases say so.
 */
const hosts = new Set<number>([process.pid]);

/** Whether `pid` (a number or its decimal string) is the pid of a process that runs an adapter. */
export function isHostPid(pid: unknown): boolean {
  const n = typeof pid === 'string' && /^[0-9]+$/.test(pid) ? Number(pid) : pid;
  return typeof n === 'number' && hosts.has(n);
}

/** Registers a testee's pid for as long as it runs; returns the release. */
export function addHostPid(pid: number): () => void {
  hosts.add(pid);
  return () => {
    if (pid !== process.pid) hosts.delete(pid);
  };
}
