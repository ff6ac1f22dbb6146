/**
 * Known limits the README states that a test can show, so that the README
 * keeps saying what the code does: a descriptor this process inherited
 * without close-on-exec reaches every command, and an isolated command can
 * end its own sandbox (and only its own).
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { SpawnFailed } from '@sandstream/types';
import { NODE, testSandbox, within } from './helpers.js';

/** What the commands of a plain and of an isolated sandbox see in /proc/self/fd, run by a Node.js process that inherited descriptor 60. */
async function descriptorsSeenWithFd60(): Promise<Record<string, string[]>> {
  const entry = new URL('../dist/index.js', import.meta.url).href;
  const script = `const { createLocalSandbox } = await import(${JSON.stringify(entry)});
const seen = {};
for (const isolation of ['none', 'namespaces']) {
  const sb = createLocalSandbox({ isolation });
  try {
    seen[isolation] = (await sb.run(['ls', '/proc/self/fd'], { timeout: 30000 })).stdoutText.split('\\n').filter(Boolean);
  } finally {
    await sb.close();
  }
}
console.log(JSON.stringify(seen));`;
  const child = spawn(NODE, ['--input-type=module', '-e', script], {
    // Descriptor 60: on this machine low ones (5, 9) did not pass through a Node.js process, 20 and above did.
    stdio: Array.from({ length: 61 }, (_, fd) => (fd === 1 || fd === 60 ? 'pipe' : fd === 2 ? 'inherit' : 'ignore')),
  });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (text: string) => (out += text));
  const code = await within(
    60_000,
    new Promise<number | null>((resolve) => child.once('close', resolve)),
    'the Node.js process that runs both sandboxes',
  ).finally(() => child.kill('SIGKILL'));
  expect(code).toBe(0);
  return JSON.parse(out) as Record<string, string[]>;
}

describe("the README's known limits", () => {
  it('a descriptor this process inherited without close-on-exec reaches the commands, in both modes', async () => {
    const seen = await descriptorsSeenWithFd60();
    expect(seen['none']).toContain('60');
    expect(seen['namespaces']).toContain('60');
  });

  it("an isolated command that kills the init's helper ends its own sandbox, and no other", async () => {
    const victim = testSandbox({ isolation: 'namespaces' });
    const bystander = testSandbox({ isolation: 'namespaces' });
    await bystander.run(['true']);
    // The helper is the init's only child in the sandbox (a command's parent, nsenter, is outside:
    // its parent pid reads 0); the command then waits to be ended with the rest.
    const killer = 'for p in /proc/[0-9]*; do [ "${p#/proc/}" = 1 ] && continue; while read -r k v; do [ "$k" = PPid: ] && break; done < "$p/status"; [ "$v" = 1 ] && kill "${p#/proc/}"; done; exec sleep 600';
    const result = await victim.run(['sh', '-c', killer], { timeout: 60_000 });
    // Ended as at its owner's loss: the init runs the termination sequence, SIGTERM first.
    expect(result.signal).toBe('SIGTERM');
    const error = await victim.run(['true']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SpawnFailed);
    // Said either way, depending on whether the end of the init was seen before the command tried to enter.
    expect((error as Error).message).toMatch(/the sandbox's environment has ended|could not enter the sandbox's namespaces/);
    expect((await bystander.run(['echo', 'alive'])).stdoutText).toBe('alive\n');
  });
});
