/**
 * This host out of file descriptors, with the adapter in a child Node.js
 * process and envd's emulator in a child of that one (the remote side keeps
 * its descriptors): a standard input write and a start that cannot open a
 * connection fail with `TransportError` naming what ran out, not with
 * `StdinClosed` (the Connect client wraps "connect EMFILE" as Internal,
 * which was taken for envd's answer that the pipe is closed, while the
 * command still waited for its input); and a command already running loses
 * nothing. The child lowers its own limit (prlimit on its pid) and holds
 * every descriptor left.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { limitSelfUnavailable, runJsonChild } from '@sandstream/test-support/host-limits';
import { unless } from '@sandstream/test-support/skips';

const FIXTURE = fileURLToPath(new URL('./fixtures/exhaust-client.mjs', import.meta.url));

describe('this host out of file descriptors', () => {
  unless(it, limitSelfUnavailable())('a write and a start give TransportError; a running command loses nothing', async () => {
    const { code, report: parsed, stderr } = await runJsonChild<Record<string, unknown>>([process.execPath, FIXTURE], { boundMs: 60_000 });
    expect(code, stderr).toBe(0);
    const report = parsed!;
    const ranOut = /connect EMFILE .*run out of file descriptors: raise its limit \(`ulimit -n`\) or run fewer commands at once/;
    // Before: { error: 'StdinClosed', message: 'standard input is closed: connect EMFILE ...' }.
    expect(report['write']).toMatchObject({ error: 'TransportError', code: 'TRANSPORT', message: expect.stringMatching(ranOut) });
    expect(report['start']).toMatchObject({ error: 'TransportError', code: 'TRANSPORT', message: expect.stringMatching(ranOut) });
    // Once there is room: the other command gets its input and ends as it does; the cut one is ended by its owner.
    expect(report['kept']).toEqual({ ok: undefined });
    expect(report['ends']).toEqual([{ ok: { exitCode: null, signal: 'SIGTERM' } }, { ok: { exitCode: 3, signal: null } }]);
    expect(report['read']).toEqual(['', 'got hello\n']);
    expect(report['after']).toEqual({ ok: 'after\n' });
  }, 90_000);
});
