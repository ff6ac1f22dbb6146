// The cross-process attach test every remote adapter runs (spec 1.2, SS-RECON-1): the command, the
// second OS process's part (list, attach, read the replay, kill by leaving the scope), and the run
// of that process from the test.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Sandbox } from '@sandstream/types';

/** Per stream, a text. */
export interface Streams {
  readonly stdout: string;
  readonly stderr: string;
}

/** What the second process saw. */
export interface SecondProcessSaw {
  readonly listed: ReadonlyArray<{ readonly commandId: string; readonly argv: readonly string[]; readonly state: string }>;
  readonly seen: Streams;
  readonly skipped: unknown;
  readonly after: ReadonlyArray<{ readonly commandId: string }>;
}

/** What {@link reconnectFromAnotherProcess} is given. */
export interface ReconnectTest {
  readonly expect: (value: unknown) => { toEqual(expected: unknown): void; toBe(expected: unknown): void };
  readonly sb: Sandbox;
  readonly child: string;
  readonly requestOf: (commandId: string) => unknown;
  readonly isGone: (commandId: string) => boolean;
  readonly waitFor: (condition: () => boolean, ms: number, what: string) => Promise<void>;
}

const LINES = Array.from({ length: 2_000 }, (_, i) => `line ${i}`).join('\n');

/** A burst of known bytes on each stream from a tree of two (a `sleep` beside the shell), which then waits to be killed. */
export const SERVER: { readonly argv: readonly string[]; readonly expected: Streams; readonly ends: Streams } = Object.freeze({
  argv: Object.freeze(['sh', '-c', `sleep 300 & printf '%s\\n' "$1"; printf 'to stderr\\n' >&2; wait`, 'sh', LINES]),
  expected: Object.freeze({ stdout: `${LINES}\n`, stderr: 'to stderr\n' }),
  ends: Object.freeze({ stdout: 'line 1999\n', stderr: 'to stderr\n' }),
});

/**
 * The second process's part, on a handle it built from the environment's id: lists, attaches to
 * `commandId`, reads until each stream ends as `ends` says, and leaves the Process undetached
 * (its disposal, `await using` in plain JavaScript for Node 20, kills the command).
 */
export async function readAndKill(sb: Sandbox, commandId: string, ends: Streams): Promise<SecondProcessSaw> {
  const listed = await sb.commands!();
  const seen = { stdout: '', stderr: '' };
  const proc = await sb.attach!(commandId);
  let skipped: unknown;
  try {
    const iterator = proc[Symbol.asyncIterator]();
    while (!seen.stdout.endsWith(ends.stdout) || !seen.stderr.endsWith(ends.stderr)) {
      const next = await iterator.next();
      if (next.done) break;
      seen[next.value.stream] += new TextDecoder().decode(next.value.data);
    }
    skipped = proc.skipped;
  } finally {
    await proc[Symbol.asyncDispose]();
  }
  const after = await sb.commands!();
  await sb.close();
  return { listed, seen, skipped, after };
}

/**
 * Starts SERVER in the background on `sb`, detaches it, lets `child` (a fixture running
 * {@link readAndKill}) find it from another OS process with `requestOf(commandId)`, and checks
 * what that process saw: the command listed, its replay exact from the first byte, and gone after
 * its kill, there and here. `isGone(commandId)` says when nothing of its tree lives. Closes `sb`.
 */
export async function reconnectFromAnotherProcess({ expect, sb, child, requestOf, isGone, waitFor }: ReconnectTest): Promise<string> {
  let commandId = '';
  try {
    const server = sb.stream([...SERVER.argv], { background: true });
    await server.started();
    commandId = server.commandId!;
    await server.detach();
    const saw = await secondProcess(child, requestOf(commandId));
    // Other test files' sandboxes may share this machine's /tmp: only this command is this test's to judge.
    expect(saw.listed.filter((c) => c.commandId === commandId)).toEqual([{ commandId, argv: SERVER.argv, state: 'running' }]);
    expect(saw.skipped).toEqual({ stdout: 0, stderr: 0 });
    expect(saw.seen).toEqual(SERVER.expected);
    expect(saw.after.some((c) => c.commandId === commandId)).toBe(false);
    await waitFor(() => isGone(commandId), 15_000, 'the tree the second process killed');
    expect((await sb.commands!()).some((c) => c.commandId === commandId)).toBe(false);
  } finally {
    await sb.close();
  }
  return commandId;
}

/** Runs a child fixture with `request` as its one argument, and parses the JSON line it prints. */
export async function secondProcess(child: string, request: unknown): Promise<SecondProcessSaw> {
  const { stdout } = await promisify(execFile)(process.execPath, [child, JSON.stringify(request)], { timeout: 60_000 });
  return JSON.parse(stdout) as SecondProcessSaw;
}
