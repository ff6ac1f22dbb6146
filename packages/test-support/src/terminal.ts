/**
 * The terminal check every remote transport with `pty` runs on its backend (spec 1.5, ADR-0052),
 * beside the kit's `pty.*` cases: a command's terminal bytes, size, `TERM` and exact status,
 * `resize()` before input, and a signal's status under a terminal.
 */
import type { Sandbox } from '@sandstream/types';
import { expect } from 'vitest';

/** Runs the check on `sb`, whose manifest declares `pty`; fails the calling test on any difference. */
export async function expectTerminalBasics(sb: Sandbox): Promise<void> {
  const result = await sb.run(['sh', '-c', 'for fd in 0 1 2; do [ -t $fd ] && printf y; done; echo; stty size; echo "$TERM"; echo err >&2; exit 3'], { pty: { cols: 91, rows: 31 } });
  expect(result).toMatchObject({ exitCode: 3, signal: null, stderrText: '' });
  expect(result.stdoutText).toBe('yyy\r\n31 91\r\nxterm-256color\r\nerr\r\n');
  const proc = sb.stream(['sh', '-c', 'read x; stty size'], { pty: { cols: 80, rows: 24 }, stdin: 'pipe' });
  let text = '';
  const read = (async () => {
    for await (const chunk of proc) text += Buffer.from(chunk.data).toString('latin1');
  })();
  await proc.started();
  await proc.resize!(120, 40);
  await proc.stdin!.write('\r');
  expect((await proc.wait()).exitCode).toBe(0);
  await read;
  expect(text).toBe('\r\n40 120\r\n');
  expect(await sb.run(['sh', '-c', 'kill -TERM $$'], { pty: { cols: 80, rows: 24 } })).toMatchObject({ exitCode: null, signal: 'SIGTERM' });
}
