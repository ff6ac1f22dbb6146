import { AsyncResource } from 'node:async_hooks';

/**
 * The errors that say this host ran out of something (file descriptors,
 * processes, memory) rather than that the command is wrong, in words a
 * caller can act on. A start that fails this way is a `SpawnFailed` like
 * any other: nothing ran; the same command may start once the host has room.
 */

/** What ran out, and what to do, per errno code. */
const HINTS: Readonly<Record<string, string>> = {
  EMFILE:
    'this process has run out of file descriptors (each running command holds some for its pipes): raise its limit (`ulimit -n`) or run fewer commands at once',
  ENFILE:
    "the system's open file table is full (sysctl fs.file-max): close files elsewhere or run fewer commands at once",
  EAGAIN:
    'no new process could be created (the process limit, `ulimit -u`, or a pids cgroup, is reached): raise the limit or run fewer commands at once',
  ENOMEM: 'the host is out of memory: free memory or run fewer commands at once',
};

/** What the messages of util-linux tools (`nsenter: fork failed: …`) say for the same errno codes. */
const STRERROR: Readonly<Record<string, string>> = {
  EMFILE: 'Too many open files',
  ENFILE: 'Too many open files in system',
  EAGAIN: 'Resource temporarily unavailable',
  ENOMEM: 'Cannot allocate memory',
};

/** The hint for an errno code that means exhaustion, or undefined for any other. */
export function exhaustionHint(code: string | undefined): string | undefined {
  return code === undefined ? undefined : HINTS[code];
}

/** The errno code of exhaustion a tool's message names (its strerror text), or undefined. */
export function exhaustionInText(text: string): string | undefined {
  // ENFILE's text contains EMFILE's: the longer one first.
  for (const code of ['ENFILE', 'EMFILE', 'EAGAIN', 'ENOMEM']) if (text.includes(STRERROR[code]!)) return code;
  return undefined;
}

/**
 * `<code>: <what ran out and what to do> (<the error's message>)` for an
 * error of exhaustion, or undefined for any other error.
 */
export function describeExhaustion(error: NodeJS.ErrnoException): string | undefined {
  const hint = exhaustionHint(error.code);
  return hint === undefined ? undefined : `${error.code}: ${hint} (${error.message})`;
}

/**
 * This process could not open a file for want of descriptors or memory
 * (EMFILE, ENFILE, ENOMEM): nothing is known of what it would have read,
 * and the same read may succeed a moment later.
 */
export function cannotOpen(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'EMFILE' || code === 'ENFILE' || code === 'ENOMEM';
}

/**
 * A mark taken right before a spawn, for {@link closeOrphanedPipes}: an
 * async id, drawn from the counter every handle's id comes from, so the
 * handles the spawn makes have larger ones.
 */
export function spawnMark(): number {
  return new AsyncResource('SANDSTREAM_SPAWN').asyncId();
}

/**
 * Closes the pipes a spawn out of descriptors (EMFILE, ENFILE) left behind.
 * Node.js (20) makes the child's pipes before it forks, and on those two
 * errors returns without handing them to the child process object, so
 * nothing ever closes them: each stays an active handle for good, some with
 * a descriptor (the soak counted 211 handles after 93 such starts, and a
 * socket pair end for some). Called synchronously after such a spawn with
 * the {@link spawnMark} taken before it: the pipe handles with no owner and
 * a later async id are exactly those.
 */
export function closeOrphanedPipes(mark: number): void {
  const handles = (process as unknown as { _getActiveHandles?: () => unknown[] })._getActiveHandles?.() ?? [];
  for (const handle of handles) {
    const pipe = handle as { constructor?: { name?: string }; getAsyncId?: () => number; close?: () => void } | null;
    if (pipe?.constructor?.name === 'Pipe' && (pipe.getAsyncId?.() ?? 0) > mark) pipe.close?.();
  }
}
