import { describe, expect, it } from 'vitest';
import { MAX_SAW, shorten } from '../src/shorten.js';

describe('shorten', () => {
  it("puts a process's role where the kit described it by pid and command line, cut or not", () => {
    const cut = `sh -c D=$1 echo $$ > "$D/leader" ( ( while :; do sleep 0.05; done ) & echo $! > "$D/grandchild"; while :; do sleep 0.`;
    expect(cut.length).toBe(117);
    const message = `when return left the loop: pid 17958 (a child of the command: ${cut}...), pid 17960 (its child: sh -c (x) y) still running`;
    expect(shorten(message)).toBe('when return left the loop: a child of the command, its child still running');
    expect(shorten('rejected; still running: pid 1037 (its child)')).toBe('rejected; still running: its child');
  });

  it("drops the kit's notes after the case and the termination settings", () => {
    expect(shorten("kill('SIGUSR1') never reached the command (waited 5000 ms) (after the case, the kit had to kill 2 processes (pid 1, 2))")).toBe(
      "kill('SIGUSR1') never reached the command (waited N ms)",
    );
    expect(shorten('x failed; then, while disposing, unexpected TransportError')).toBe('x failed');
    expect(shorten('no SIGTERM [grace period 500 ms, kill wait 5000 ms (from the sandbox)]')).toBe('no SIGTERM');
  });

  it('makes what changes between runs the same: times, sizes, offsets, scratch paths, generated text', () => {
    expect(shorten('called 20.0 s before, durationMs: 10.583525999998528')).toBe('called N s before, durationMs: N');
    expect(shorten('arrived as 100006 bytes, differ at offset 4, exit 127, 137/null')).toBe('arrived as N bytes, differ at offset N, exit 127, 137/null');
    expect(shorten('close() resolved while pid 87, a command it started, still runs')).toBe('close() resolved while pid N, a command it started, still runs');
    expect(shorten('run() of ["sh","/tmp/tmp.sAmlvtRHVX"]')).toBe('run() of ["sh","<tmp>"]');
    expect(shorten("argument 2 ('臹x') arrived as 3 bytes")).toBe("argument 2 (' …");
    expect(shorten("start failed: error starting process '/bin/bash -l -c 'printf' 'x<'")).toBe('start failed: error starting process …');
  });

  it('keeps one line of at most the stated length, cut at a word', () => {
    const long = shorten(`first\nline ${'word '.repeat(100)}`);
    expect(long).not.toContain('\n');
    expect(long.length).toBeLessThanOrEqual(MAX_SAW + 2);
    expect(long.endsWith(' …')).toBe(true);
  });
});
