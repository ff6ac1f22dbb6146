import { severLinks } from '@sandstream/remote';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Sandbox as E2BSdkSandbox } from 'e2b';
import { createE2BSandbox } from '@sandstream/adapter-e2b';
import { startEnvdEmulator, type EnvdEmulator } from '@sandstream/adapter-e2b/emulator';
import type { Process, Sandbox } from '@sandstream/types';
import { ownerProcess } from './owner-join.js';
import { createRawE2BSandbox } from './raw-e2b.js';
import type { KitTarget, Side, Vendor } from './vendor.js';

/** The emulator switches accounts only when it runs as root (envd always does). */
const CAN_SWITCH_USER = process.getuid?.() === 0;

/** A sandbox of one side on an SDK sandbox: the factory's, the attach hook's and the owner process's. */
export function e2bHandle(side: Side, native: E2BSdkSandbox, recordBase: string): Promise<Sandbox> | Sandbox {
  if (side === 'raw') return createRawE2BSandbox(native, { user: CAN_SWITCH_USER });
  // As adapter-e2b's own kit run: a handle on the run's SDK sandbox that does not own it.
  return createE2BSandbox({ sandbox: native, owned: false, recordBase, ...(CAN_SWITCH_USER ? {} : { capabilities: { user: false } }) });
}

/** E2B: the envd emulator, one SDK sandbox in debug mode for the run, as adapter-e2b's kit run has it. */
export const E2B: Vendor = {
  id: 'e2b',
  title: 'E2B',
  sdk: 'e2b',
  adapter: '@sandstream/adapter-e2b',
  backend:
    "the envd emulator of `@sandstream/adapter-e2b` (`startEnvdEmulator` from its `./emulator` export), one SDK sandbox in debug mode for the whole run, every factory call a handle on it, as the adapter's own kit run has it; the emulator's `HOME` is an empty directory, so the SDK's `bash -l` reads no login files of the machine it runs on",
  wrapping: [
    "start: `sandbox.commands.run(line, { background: true, envs, cwd, user, stdin, onStdout, onStderr })`; the SDK takes one string, which it runs with `/bin/bash -l -c`, so `line` is argv with every element in single quotes (a quote inside one written `'\\''`), joined by spaces",
    'output: the strings `onStdout` and `onStderr` receive, encoded back to UTF-8',
    "exit: `handle.wait()`: its `exitCode`, or that of the `CommandExitError` it throws, is the result's; no signal, since the SDK reports none",
    "signals: `handle.kill()` for every signal, the SDK's only one (SIGKILL to the pid envd started)",
    'stdin: `handle.sendStdin(bytes)` and `handle.closeStdin()`',
    "manifest: streaming, stdin and byte-exact output, as adapter-e2b states them; `user` only where the emulator can switch accounts (as root), as in the adapter's run; no resource limits (the SDK has no call for them)",
  ],
  open(side: Side): KitTarget {
    let envd: EnvdEmulator | undefined;
    let native: E2BSdkSandbox | undefined;
    let home: string | undefined;
    return {
      factory: () => e2bHandle(side, native!, envd!.recordBase),
      hooks: {
        async setup() {
          home = mkdtempSync(join(tmpdir(), 'sandstream-verdicts-e2b-'));
          envd = await startEnvdEmulator({ env: { HOME: home } });
          native = await E2BSdkSandbox.create({ debug: true, sandboxUrl: envd.url });
        },
        async teardown() {
          await envd?.close();
          if (home !== undefined) rmSync(home, { recursive: true, force: true });
        },
        // Another handle on the one SDK sandbox.
        attach: (sandbox) => Promise.resolve(e2bHandle(side, sandbox.native as E2BSdkSandbox, envd!.recordBase)),
        // The adapter's links to a command, cut as a proxy would (attach.link-lost, owner.link-lost); the raw
        // SDK offers no way to cut its own, so its side has no hook and owner.link-lost is skipped there.
        ...(side === 'adapter' ? { sever: (process: Process) => severLinks(process) } : {}),
        // owner.crash: a second OS process on the same envd, its SDK sandbox in debug mode as this run's.
        owner: () => ownerProcess({ vendor: 'e2b', side, url: envd!.url, recordBase: envd!.recordBase }),
      },
    };
  },
};
