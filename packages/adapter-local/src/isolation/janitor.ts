/**
 * Removes the isolated mode's host directories (the root skeleton and its
 * mount tables, layout.ts) however this process ends.
 *
 * A skeleton is made once per process and kept for its sandboxes to come:
 * making it and removing it took more than the rest of a sandbox's start
 * on a disk filesystem under load (a `rmdir` of a millisecond or more for
 * each of its thirty-odd entries). On a normal exit the exit hook removes
 * it. A process that ends without its exit hook (killed, or a test
 * runner's worker torn down) is covered by a small shell started once per
 * process in a session of its own: it reads the directories' paths from a
 * pipe and removes them when the pipe reaches end-of-file, which the
 * kernel brings about when this process ends, whatever the way, and every
 * environment's `unshare` and init with it: each holds a copy of the pipe
 * ({@link janitorDescriptor}), as an init outlives this process for the
 * grace period of its termination sequence.
 */
import { spawn, type ChildProcess } from 'node:child_process';

/** Collects the paths, one a line, until end-of-file; then removes them. */
const SCRIPT = 'while IFS= read -r dir; do set -- "$@" "$dir"; done; [ "$#" -eq 0 ] || exec rm -rf -- "$@"';

/**
 * The shell, once started; null when it could not be (the exit hook still
 * removes the directories). One per process (per thread): shared by every
 * copy of this module loaded in it, so that they hold one pipe between them.
 */
interface Slot {
  janitor?: ChildProcess | null;
}
const slot: Slot = ((globalThis as Record<symbol, Slot | undefined>)[Symbol.for('@sandstream/adapter-local/janitor')] ??= {});

function start(): ChildProcess | null {
  try {
    const child = spawn('/bin/sh', ['-c', SCRIPT, 'sandstream-cleanup'], {
      stdio: ['pipe', 'ignore', 'ignore'],
      // Its own session: a signal to this process's group does not reach it.
      detached: true,
      // Pinning no directory of the caller's for as long as this process lives.
      cwd: '/',
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C' },
    });
    child.on('error', () => {
      if (slot.janitor === child) slot.janitor = null;
    });
    if (!child.stdin) return null;
    child.stdin.on('error', () => undefined);
    // Neither it nor its pipe keeps this process alive.
    child.unref();
    (child.stdin as unknown as { unref?(): void }).unref?.();
    return child;
  } catch {
    return null;
  }
}

/**
 * The descriptor of this process's end of the janitor's pipe, once the
 * janitor runs; undefined otherwise. A process given a copy of it (an
 * environment's `unshare` and init) holds the janitor back until it is gone
 * too: the root skeleton is then removed only once no namespace has it for
 * its root, where removing its mount points would take the namespace's
 * mounts from under its commands.
 */
export function janitorDescriptor(): number | undefined {
  const fd = (slot.janitor?.stdin as unknown as { _handle?: { fd?: unknown } } | undefined)?._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : undefined;
}

/**
 * Has `dir` removed once this process has ended, however it ends (see the
 * module's comment). A path holding a newline is left to the exit hook.
 */
export function removeWhenThisProcessEnds(dir: string): void {
  if (dir.includes('\n')) return;
  if (slot.janitor === undefined) slot.janitor = start();
  slot.janitor?.stdin?.write(`${dir}\n`);
}
