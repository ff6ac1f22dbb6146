// The hint every adapter gives when a shell line is passed as argv
// (`run(['ls -la'])`): argv is never run by a shell (SS-ARG-1), the program
// "ls -la" is not found, and the SpawnFailed says how to write it. The hint
// lives in the shared runtime; this suite proves each adapter reaches it
// with its own wording of "not found".
import { SpawnFailed, type Sandbox } from '@sandstream/types';
import { describe, expect, it } from 'vitest';

/** The error a call rejected with. */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => new Error('it did not reject'),
    (error: unknown) => error as Error,
  );
}

/**
 * Defines the tests of the argv hint (`run(['ls -la'])` fails with
 * `SpawnFailed` saying argv is not a shell command line, and how to write
 * it) against a sandbox from `openSandbox`, which the caller closes.
 */
export function describeArgvHint(name: string, openSandbox: () => Sandbox | Promise<Sandbox>): void {
  describe(`${name}: a shell line passed as argv`, () => {
    it("run(['ls -la']) fails with SpawnFailed saying argv is not a shell command line, and how to write it", async () => {
      const sb = await openSandbox();
      const error = await rejection(sb.run(['ls -la']));
      expect(error).toBeInstanceOf(SpawnFailed);
      expect(error.message).toContain("argv is not a shell command line: use ['ls', '-la'] or ['sh', '-c', 'ls -la']");
    });

    it('stream() with further arguments gets the hint with them, and no shell form', async () => {
      const sb = await openSandbox();
      // Disposed by hand, as a test file in plain JavaScript on Node 20 (no `await using`) would.
      const proc = sb.stream(['ls -la', '/tmp']);
      const error = await rejection(proc.wait());
      await proc[Symbol.asyncDispose]();
      expect(error).toBeInstanceOf(SpawnFailed);
      expect(error.message).toContain("argv is not a shell command line: use ['ls', '-la', '/tmp']");
      expect(error.message).not.toContain("'sh', '-c'");
    });

    it('a missing program without whitespace gets no such hint', async () => {
      const sb = await openSandbox();
      const error = await rejection(sb.run(['sandstream-no-such-command-on-path']));
      expect(error).toBeInstanceOf(SpawnFailed);
      expect(error.message).not.toContain('shell command line');
    });
  });
}
