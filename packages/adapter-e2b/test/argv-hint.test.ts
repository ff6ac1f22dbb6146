/**
 * A shell line passed as argv (`run(['ls -la'])`) fails with SpawnFailed
 * saying how to write it, through the real `e2b` SDK against the envd
 * emulator (the suite every adapter runs, from
 * @sandstream/test-support/argv-hint; the hint is the shared runtime's).
 */
import { afterAll, beforeAll } from 'vitest';
import { describeArgvHint } from '@sandstream/test-support/argv-hint';
import type { Sandbox } from '@sandstream/types';
import { Sandbox as E2BSdkSandbox } from 'e2b';
import { startEnvdEmulator, type EnvdEmulator } from '../src/emulator/index.js';
import { createE2BSandbox } from '../src/index.js';

let envd: EnvdEmulator;
let sb: Sandbox;

beforeAll(async () => {
  envd = await startEnvdEmulator();
  sb = await createE2BSandbox({ sandbox: await E2BSdkSandbox.create({ debug: true, sandboxUrl: envd.url }), graceMs: 300 });
});
afterAll(async () => {
  await sb?.close();
  await envd?.close();
});

describeArgvHint('adapter-e2b', () => sb);
