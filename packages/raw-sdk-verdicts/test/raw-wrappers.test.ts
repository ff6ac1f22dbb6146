/**
 * The raw wrappers work on today's backends, and the page's central claims
 * hold of them directly, in a few seconds rather than the kit's minutes:
 * each carries argv through, the e2b SDK decodes output, no SDK reports a
 * death by a signal as a signal, and a command killed through plain
 * `docker exec` lives on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unless } from '@sandstream/test-support/skips';
import type { Sandbox } from '@sandstream/types';
import { VENDORS, type KitTarget } from '../src/index.js';
import { backendMissing } from './backends.js';

const REPLACEMENT = [0xef, 0xbf, 0xbd];

/** Each vendor's raw side, its backend started for the file. */
function rawSide(id: string): () => Sandbox {
  const target: KitTarget = VENDORS.find((v) => v.id === id)!.open('raw');
  let sandbox: Sandbox | undefined;
  beforeAll(async () => {
    await target.hooks.setup?.();
    sandbox = await target.factory();
  });
  afterAll(async () => {
    await sandbox?.close();
    await target.hooks.teardown?.();
  });
  return () => sandbox!;
}

/** What each SDK reports for a death by SIGKILL (envd: exit code -1; the Vercel service and the Engine: 128 + 9). */
const SIGKILL_EXIT: Readonly<Record<string, number>> = { e2b: -1, vercel: 137, docker: 137 };

for (const vendor of VENDORS) {
  unless(describe, backendMissing(vendor.id))(`the raw ${vendor.id} wrapper`, () => {
    const sandbox = rawSide(vendor.id);

    it('carries argv through', async () => {
      const result = await sandbox().run(['printf', '%s|', "it's", '$HOME', 'a b']);
      expect(result.stdoutText).toBe("it's|$HOME|a b|");
    });

    it(`reports a death by SIGKILL as the SDK has it: exit code ${SIGKILL_EXIT[vendor.id]} and no signal`, async () => {
      const result = await sandbox().run(['sh', '-c', 'kill -9 $$']);
      expect({ exitCode: result.exitCode, signal: result.signal }).toEqual({ exitCode: SIGKILL_EXIT[vendor.id], signal: null });
    });

    if (vendor.id === 'e2b') {
      it('hands on output as the SDK decoded it: an invalid byte arrives as U+FFFD', async () => {
        const result = await sandbox().run(['printf', '\\377']);
        expect([...result.stdout]).toEqual(REPLACEMENT);
      });
    }

    if (vendor.id === 'docker') {
      it('starts a missing program as the Engine does: exit 126 with its refusal as output, no SpawnFailed', async () => {
        const result = await sandbox().run(['/nonexistent/program']);
        expect(result.exitCode).toBe(126);
        expect(result.stdoutText).toMatch(/^OCI runtime exec failed: .*no such file or directory/);
      });

      it('leaves a killed command running: its kill only drops the connection (moby/moby#9098)', async () => {
        const proc = sandbox().stream(['sh', '-c', 'echo $$; exec sleep 600']);
        // Read by hand: leaving a loop would end the command through teardown, not kill().
        const chunks = proc[Symbol.asyncIterator]();
        let pid = '';
        while (!pid.endsWith('\n')) {
          const next = await chunks.next();
          if (next.done === true) throw new Error(`the command ended before it printed its pid (${JSON.stringify(pid)})`);
          pid += Buffer.from(next.value.data).toString();
        }
        try {
          await proc.kill('SIGKILL');
          // The wrapper reads the closed stream as the end; exec inspect has no exit code for it yet.
          expect(await proc.wait()).toMatchObject({ exitCode: null, signal: null });
          const alive = await sandbox().run(['kill', '-0', pid.trim()]);
          expect(alive.exitCode, `pid ${pid.trim()} in the container`).toBe(0);
        } finally {
          await sandbox().run(['kill', '-9', pid.trim()]);
        }
      });
    }
  });
}
