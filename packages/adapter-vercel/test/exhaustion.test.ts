/**
 * This host out of file descriptors, with the adapter in a child Node.js
 * process and the Vercel API's emulator in a child of that one (the remote
 * side keeps its descriptors): a start that cannot open a connection fails
 * with `TransportError` saying what ran out and what to do; a standard
 * input write either goes through a connection already open or fails with
 * `TransportError`, never `StdinClosed`; and the commands already running
 * lose nothing. The child lowers its own limit (prlimit on its pid) and
 * holds every descriptor left.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { limitSelfUnavailable, runJsonChild } from '@sandstream/test-support/host-limits';
import { unless } from '@sandstream/test-support/skips';

const FIXTURE = fileURLToPath(new URL('./fixtures/exhaust-client.mjs', import.meta.url));

describe('this host out of file descriptors', () => {
  unless(it, limitSelfUnavailable())('a start gives TransportError with what to do; the running commands lose nothing', async () => {
    const { code, report: parsed, stderr } = await runJsonChild<Record<string, { ok?: unknown; error?: string; message?: string }>>([process.execPath, FIXTURE], {
      boundMs: 80_000,
    });
    expect(code, stderr).toBe(0);
    const report = parsed!;
    const ranOut = /connect EMFILE .*run out of file descriptors: raise its limit \(`ulimit -n`\) or run fewer commands at once/;
    // Before: the same TransportError, without what to do.
    expect(report['start']).toMatchObject({ error: 'TransportError', message: expect.stringMatching(ranOut) });
    const written = report['write']!.error === undefined;
    if (!written) expect(report['write']).toMatchObject({ error: 'TransportError', message: expect.stringMatching(ranOut) });
    expect(report['kept']).toEqual({ ok: undefined });
    expect(report['ends']).toEqual([
      { ok: written ? { exitCode: 3, signal: null } : { exitCode: null, signal: 'SIGTERM' } },
      { ok: { exitCode: 3, signal: null } },
    ]);
    expect(report['read']).toEqual([written ? 'got lost\n' : '', 'got hello\n']);
    expect(report['after']).toEqual({ ok: 'after\n' });
  }, 90_000);
});
