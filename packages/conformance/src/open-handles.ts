/** What keeps a finished run's process alive, named for the person reading the CLI's output. */

/** One thing still open: a kind (`ChildProcess`, `TCPSocketWrap`, `Timeout`, ...) and, where known, what it is. */
export interface OpenHandle {
  readonly kind: string;
  readonly detail?: string;
}

interface ChildLike {
  readonly pid?: number;
  readonly spawnargs?: readonly string[];
}

/**
 * The resources alive now that were not in `baseline` (both as
 * `process.getActiveResourcesInfo()` lists them). Child processes are
 * named by pid and command line where Node exposes them.
 */
export function openHandles(baseline: readonly string[]): OpenHandle[] {
  const remaining = new Map<string, number>();
  for (const kind of baseline) remaining.set(kind, (remaining.get(kind) ?? 0) + 1);
  const added: string[] = [];
  for (const kind of process.getActiveResourcesInfo()) {
    const left = remaining.get(kind) ?? 0;
    if (left > 0) remaining.set(kind, left - 1);
    else added.push(kind);
  }
  // Node's list says `ProcessWrap` for a child process; its owner object says which one.
  const children = (((process as unknown as { _getActiveHandles?: () => unknown[] })._getActiveHandles?.() ?? []) as ChildLike[]).filter(
    (h) => h?.constructor?.name === 'ChildProcess' && typeof h.pid === 'number',
  );
  const handles: OpenHandle[] = children.map((child) => ({
    kind: 'ChildProcess',
    detail: `pid ${child.pid}: ${(child.spawnargs ?? []).join(' ').slice(0, 120)}`,
  }));
  let unnamedChildren = added.filter((k) => k === 'ProcessWrap').length - children.length;
  for (const kind of added) {
    if (kind === 'ProcessWrap') {
      if (unnamedChildren-- > 0) handles.push({ kind: 'ChildProcess' });
      continue;
    }
    handles.push({ kind });
  }
  return handles;
}

/** "2 ChildProcess (pid 12: sleep 600; pid 13: sh -c ...), 4 PipeWrap". */
export function describeOpenHandles(handles: readonly OpenHandle[]): string {
  if (handles.length === 0) return 'something Node does not list';
  const byKind = new Map<string, OpenHandle[]>();
  for (const handle of handles) byKind.set(handle.kind, [...(byKind.get(handle.kind) ?? []), handle]);
  return [...byKind]
    .map(([kind, list]) => {
      const details = list.map((h) => h.detail).filter((d) => d !== undefined);
      return `${list.length} ${kind}${details.length > 0 ? ` (${details.join('; ')})` : ''}`;
    })
    .join(', ');
}
