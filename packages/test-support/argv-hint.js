// The hint every adapter gives when a shell line is passed as argv
// (`run(['ls -la'])`): argv is never run by a shell (SS-ARG-1), the program
// "ls -la" is not found, and the SpawnFailed says how to write it. The hint
// lives in the shared runtime; this suite proves each adapter reaches it
// with its own wording of "not found".
import { SpawnFailed } from '@sandstream/types';
import { describe, expect, it } from 'vitest';

/**
 * Defines the tests of the argv hint against a sandbox from `openSandbox`
 * (the caller closes it).
 */
export function describeArgvHint(name, openSandbox) {
  describe(`${name}: a shell line passed as argv`, () => {
    it("run(['ls -la']) fails with SpawnFailed saying argv is not a shell command line, and how to write it", async () => {
      const sb = await openSandbox();
      const error = await sb.run(['ls -la']).catch((e) => e);
      expect(error).toBeInstanceOf(SpawnFailed);
      expect(error.message).toContain("argv is not a shell command line: use ['ls', '-la'] or ['sh', '-c', 'ls -la']");
    });

    it('stream() with further arguments gets the hint with them, and no shell form', async () => {
      const sb = await openSandbox();
      // Node 20 has no `await using` in plain JavaScript: the scope's end by hand.
      const proc = sb.stream(['ls -la', '/tmp']);
      const error = await proc.wait().catch((e) => e);
      await proc[Symbol.asyncDispose]();
      expect(error).toBeInstanceOf(SpawnFailed);
      expect(error.message).toContain("argv is not a shell command line: use ['ls', '-la', '/tmp']");
      expect(error.message).not.toContain("'sh', '-c'");
    });

    it('a missing program without whitespace gets no such hint', async () => {
      const sb = await openSandbox();
      const error = await sb.run(['sandstream-no-such-command-on-path']).catch((e) => e);
      expect(error).toBeInstanceOf(SpawnFailed);
      expect(error.message).not.toContain('shell command line');
    });
  });
}
