/**
 * An owner to crash, through a testee (spec 1.4 section 18.6): a second
 * instance of the testee's command, which opens a sandbox, starts the case's
 * command in the foreground, and is killed with SIGKILL by the process id
 * its hello states. The adapter's code in that process gets no word of it;
 * what is left of the command is for the adapter's own guard to end.
 */
import type { Process } from '@sandstream/types';
import { isLiveProcess } from '@sandstream/types/runtime';
import { describeError, HarnessError } from '../assert.js';
import { ownerStreamOptions, type LaunchedOwner, type OwnerLauncher } from '../owner-launcher.js';
import { bridgeSandbox } from './bridge.js';
import { TesteeLink, type TesteeCommand } from './link.js';
import type { SandboxInfo } from './protocol.js';

/** How long a process killed with SIGKILL may take to be gone before the kit says so. */
const GONE_WITHIN_MS = 10_000;

/** Rejects with `what` once `withinMs` passed, unless `promise` settled first. */
async function within<T>(promise: Promise<T>, withinMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${withinMs} ms`)), withinMs);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves once process `pid` is gone (a zombie counts as gone: it runs no code). */
async function gone(pid: number): Promise<void> {
  const deadline = performance.now() + GONE_WITHIN_MS;
  while (isLiveProcess(pid)) {
    if (performance.now() > deadline) throw new HarnessError(`the owner testee (pid ${pid}) still runs ${GONE_WITHIN_MS} ms after SIGKILL`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** The launcher of owner testees for a run through the testee `command`. */
export function testeeOwnerLauncher(command: TesteeCommand): OwnerLauncher {
  return async (env, argv, via, withinMs) => {
    // Its standard error is in the link's fault, where one is reported; a wrapper shell's word on
    // its child's SIGKILL is not news.
    const launched: TesteeCommand = { ...command, env: { ...((command.env ?? process.env) as Record<string, string>), ...env }, forwardStderr: false };
    let link: TesteeLink | undefined;
    const release = async (): Promise<void> => {
      // Its group and what carries its mark go: after the verdict, so the kit never ends the tree for the adapter.
      await link?.close(0).catch(() => undefined);
    };
    try {
      const opened = await TesteeLink.open(launched, withinMs);
      link = opened.link;
      const pid = opened.hello.pid;
      if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 0) {
        throw new Error('its hello states no `pid`, the process the kit would kill to crash it (spec 1.4 section 18.6)');
      }
      const sandbox = bridgeSandbox(link, (await link.request('open', {})) as SandboxInfo);
      if (via === 'run') {
        // Its end, or the link's, is of no interest: the kit looks at the tree.
        sandbox.run(argv, { timeout: 3_600_000 }).catch(() => undefined);
      } else {
        const proc: Process = sandbox.stream(argv, ownerStreamOptions(via));
        await within(proc.started(), withinMs, 'its command did not start');
        // Read, so the command never waits on a full pipe; ends with the link.
        void (async () => {
          for await (const _chunk of proc) {
            // nothing is kept
          }
        })().catch(() => undefined);
      }
      const owner: LaunchedOwner = {
        async crash() {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // gone already: the wait below says so at once
          }
          await gone(pid);
          return performance.now();
        },
        dispose: release,
      };
      return owner;
    } catch (error) {
      await release();
      const fatal = link?.fatal === undefined ? '' : `; its link: ${link.fatal}`;
      throw new HarnessError(`the owner testee (a second instance of the testee, with ${JSON.stringify(Object.keys(env))} set) failed: ${describeError(error)}${fatal}`);
    }
  };
}
