// The examples of README.md, type-checked here (npm run typecheck); test/readme.test.ts
// checks that each README block is contained in this file, and runs the emulator's.
import { Sandbox } from '@vercel/sandbox';
import { createVercelSandbox } from '../src/index.js';
import { VercelEmulator } from '../src/emulator/index.js';

/** The "Use" example: a sandbox the adapter creates and stops. */
export async function useExample(): Promise<void> {
// The adapter creates (and on close() stops) a sandbox:
await using sb = await createVercelSandbox({
  token: process.env.VERCEL_TOKEN!,
  teamId: process.env.VERCEL_TEAM_ID!,
  projectId: process.env.VERCEL_PROJECT_ID!,
});
const result = await sb.run(['echo', 'hello']);
console.log(result.stdoutText); // "hello\n"

await using proc = sb.stream(['sh', '-c', 'for i in 1 2 3; do echo $i; sleep 1; done']);
await proc.started();
console.log(proc.commandId); // the command's pid in the sandbox, e.g. "4242"
for await (const chunk of proc) process.stdout.write(chunk.data);
}

/** Commands in a sandbox the caller created and owns. */
export async function ownedExample(): Promise<unknown> {
const native = await Sandbox.create();
const sb = await createVercelSandbox({ sandbox: native });
  return sb;
}

/** The emulator under the raw SDK; returns what the command printed. */
export async function emulatorExample(): Promise<string> {
await using emulator = await VercelEmulator.start();
const sandbox = await Sandbox.create({ ...emulator.credentials, fetch: emulator.fetch });
const done = await sandbox.runCommand('echo', ['hi']);
  return await done.stdout();
}
