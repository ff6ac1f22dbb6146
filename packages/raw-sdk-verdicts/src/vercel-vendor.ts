import { severLinks } from '@sandstream/remote';
import { Sandbox as VercelSdkSandbox } from '@vercel/sandbox';
import { createVercelSandbox } from '@sandstream/adapter-vercel';
import { VercelEmulator } from '@sandstream/adapter-vercel/emulator';
import type { Process, Sandbox } from '@sandstream/types';
import { ownerProcess } from './owner-join.js';
import { createRawVercelSandbox } from './raw-vercel.js';
import type { KitTarget, Side, Vendor } from './vendor.js';

/** The grace period of adapter-vercel's own kit run, used by both runs here. */
const GRACE_MS = 500;

/** Another sandbox of one side on an existing SDK sandbox, which its close() leaves running: the attach hook's and the owner process's. */
export function vercelHandle(side: Side, native: VercelSdkSandbox, recordBase: string): Promise<Sandbox> | Sandbox {
  if (side === 'adapter') return createVercelSandbox({ sandbox: native, recordBase, graceMs: GRACE_MS });
  return createRawVercelSandbox({ native, owned: false, graceMs: GRACE_MS });
}

/** Vercel Sandbox: its emulator, a new SDK sandbox per factory call, as adapter-vercel's kit run has it. */
export const VERCEL: Vendor = {
  id: 'vercel',
  title: 'Vercel Sandbox',
  sdk: '@vercel/sandbox',
  adapter: '@sandstream/adapter-vercel',
  backend:
    "the emulator of `@sandstream/adapter-vercel` (`VercelEmulator` from its `./emulator` export), a new SDK sandbox per factory call, stopped by `close()`, with the grace period of the adapter's own kit run (500 ms)",
  wrapping: [
    'start: `sandbox.runCommand({ cmd: argv[0], args: argv.slice(1), env, cwd, detached: true })`: the SDK takes argv as it is',
    'output: the records of `command.logs()`, read to the end, their `data` strings encoded back to UTF-8',
    "exit: then `command.wait()`: its `exitCode` is the result's; no signal, since the SDK reports none",
    "signals: `command.kill(signal)`, with the runtime's signal name as it is",
    "stdin: none: the SDK has no call for it, so the manifest does not advertise it (adapter-vercel writes to the service's stdin endpoint itself)",
    'manifest: streaming and text-only output (`binary-output: false`), as adapter-vercel states them; no stdin, no `user` (the SDK has only `sudo`), no resource limits',
    "terminal: none, on either side: the SDK's one terminal, `openInteractive()`, starts a shell with no argv, working directory, environment or size, behind a WebSocket whose protocol the SDK does not document and which reports no status, so spec 1.5's `pty` (a given argv on a terminal of a given size, resizable, with its exact status) cannot be honoured through it; adapter-vercel's README says what would (a terminal made inside the microVM)",
  ],
  open(side: Side): KitTarget {
    let emulator: VercelEmulator | undefined;
    return {
      async factory() {
        const { credentials, fetch, recordBase } = emulator!;
        if (side === 'adapter') return createVercelSandbox({ ...credentials, fetch, recordBase, graceMs: GRACE_MS });
        const native = await VercelSdkSandbox.create({ ...credentials, fetch });
        return createRawVercelSandbox({ native, owned: true, graceMs: GRACE_MS });
      },
      hooks: {
        async setup() {
          emulator = await VercelEmulator.start();
        },
        async teardown() {
          await emulator?.close();
        },
        // Another handle on the same SDK sandbox, which its close() leaves running.
        attach: (sandbox) => Promise.resolve(vercelHandle(side, sandbox.native as VercelSdkSandbox, emulator!.recordBase)),
        // The adapter's links to a command, cut as a proxy would (attach.link-lost, owner.link-lost); the raw
        // SDK offers no way to cut its own, so its side has no hook and owner.link-lost is skipped there.
        ...(side === 'adapter' ? { sever: (process: Process) => severLinks(process) } : {}),
        // owner.crash: a second OS process on the same SDK sandbox, by its name, through the emulator.
        owner: (sandbox) => {
          const { url, credentials, recordBase } = emulator!;
          return ownerProcess({ vendor: 'vercel', side, name: (sandbox.native as VercelSdkSandbox).name, url, credentials, recordBase });
        },
      },
    };
  },
};
