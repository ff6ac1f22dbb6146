/**
 * A testee as the engine sees an adapter module: a factory, its hooks, and
 * the cases that cannot cross a process boundary (ADR-0038).
 */
import type { SandboxFactory } from '@sandstream/types';
import type { ConformanceHooks } from '../hooks.js';
import { addHostPid } from '../host.js';
import { bridgeSandbox, testeeProcessId } from './bridge.js';
import { TesteeLink, type TesteeCommand } from './link.js';
import type { HelloAnswer, SandboxInfo } from './protocol.js';
import { testeeOwnerLauncher } from './owner.js';
import type { OwnerLauncher } from '../owner-launcher.js';

/**
 * Cases that cannot run through a testee, and why: they are reported
 * `skipped` with the reason, never as a verdict.
 */
export const CANNOT_CROSS: Readonly<Record<string, string>> = {
  'teardown.garbage-collected':
    "it drops the last reference to a running Process and collects garbage; a testee holds every Process in its table and cannot see the kit's reference go",
};

/** A connected testee. */
export interface ConnectedTestee {
  readonly factory: SandboxFactory;
  readonly hooks: ConformanceHooks;
  readonly hello: HelloAnswer;
  readonly link: TesteeLink;
  readonly roundTripMs: number;
  /** Starts a second instance of the testee as an owner to crash (spec 1.4 section 18.6). */
  readonly launchOwner: OwnerLauncher;
}

/** Starts the testee, exchanges the hello, and gives the engine its factory and hooks. */
export async function connectTestee(command: TesteeCommand, helloTimeoutMs?: number): Promise<ConnectedTestee> {
  const { link, hello, roundTripMs } = await TesteeLink.open(command, helloTimeoutMs);
  if (typeof hello.pid === 'number') link.onClose(addHostPid(hello.pid));
  const factory: SandboxFactory = async () => bridgeSandbox(link, (await link.request('open', {})) as SandboxInfo);
  // The testee runs its module's setup at the hello, and its teardown when it closes: the run's
  // teardown is the end of the testee, which fails as a teardown hook would when its bye does.
  const termination = hello.termination as { graceMs?: number; killWaitMs?: number } | undefined;
  const closeGraceMs = Math.max(5_000, 2 * ((termination?.graceMs ?? 2_000) + (termination?.killWaitMs ?? 5_000)) + 2_000);
  const hooks: ConformanceHooks = {
    teardown: async () => {
      const { error } = await link.close(closeGraceMs);
      if (error !== undefined) throw error;
    },
  };
  if (hello.hooks?.includes('attach')) {
    hooks.attach = async (sandbox) => {
      const sid = (sandbox.native as { testeeSandbox?: string } | undefined)?.testeeSandbox;
      if (sid === undefined) throw new Error('the attach hook was given a sandbox that is not the testee\'s');
      return bridgeSandbox(link, (await link.request('observe', { sandbox: sid })) as SandboxInfo);
    };
  }
  if (hello.hooks?.includes('sever')) {
    hooks.sever = async (proc) => {
      const pid = testeeProcessId(proc);
      if (pid === undefined) throw new Error('the sever hook was given a Process that is not the testee\'s');
      return (await link.request('sever', { process: pid })) as number | undefined;
    };
  }
  if (hello.hooks?.includes('owner')) {
    hooks.owner = async (sandbox) => {
      const sid = (sandbox.native as { testeeSandbox?: string } | undefined)?.testeeSandbox;
      if (sid === undefined) throw new Error('the owner hook was given a sandbox that is not the testee\'s');
      const env = await link.request('owner', { sandbox: sid });
      if (env === null || env === undefined) return {};
      if (typeof env !== 'object' || Object.values(env).some((v) => typeof v !== 'string')) {
        throw new Error(`the testee answered owner with ${JSON.stringify(env)}, not an object of environment variables`);
      }
      return { env: env as Record<string, string> };
    };
  }
  return { factory, hooks, hello, link, roundTripMs, launchOwner: testeeOwnerLauncher(command) };
}
