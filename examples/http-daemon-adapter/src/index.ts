/**
 * A Sandstream adapter for the HTTP daemon of daemon.ts: the example of
 * docs/writing-an-adapter.md.
 *
 * The module's default export is the factory the conformance kit calls for
 * every case; `conformanceHooks` starts the daemon once before the first
 * case and stops it after the last.
 */
import type { ConformanceHooks } from '@sandstream/conformance';
import type { Sandbox } from '@sandstream/types';
import { defineSandbox } from '@sandstream/types/runtime';
import { startDaemon, type Daemon } from './daemon-process.js';
import { HttpDriver } from './driver.js';

export { startDaemon, type Daemon } from './daemon-process.js';

// #region define-sandbox
/** What `sandbox.native` holds: where the daemon listens. */
export interface HttpNative {
  readonly url: URL;
}

/** A sandbox whose commands run on the daemon at `url`. */
export function createHttpSandbox(url: URL): Sandbox<HttpNative> {
  return defineSandbox({
    name: 'http-daemon',
    capabilities: { streaming: true, stdin: true, 'resource-limits': false, user: false },
    native: { url },
    // The spec's defaults, stated: SIGTERM, then SIGKILL 2 s later, then up
    // to 5 s for the daemon to report the exit before it counts as lost.
    graceMs: 2_000,
    killWaitMs: 5_000,
    createDriver: (command) => new HttpDriver(url, command),
  });
}
// #endregion define-sandbox

// #region hooks
let daemon: Promise<Daemon> | undefined;

/** Starts the daemon on first use; every sandbox shares it. */
function theDaemon(): Promise<Daemon> {
  daemon ??= startDaemon();
  return daemon;
}

/**
 * The kit calls `setup` once before the first case and `teardown` once
 * after the last. (`satisfies` checks the shape while the kit stays a
 * development dependency: the emitted types do not mention it.)
 */
export const conformanceHooks = {
  async setup(): Promise<void> {
    await theDaemon();
  },
  async teardown(): Promise<void> {
    const running = daemon;
    daemon = undefined;
    await (await running)?.stop();
  },
  /** A second handle on the same daemon: closing a sandbox never stops the daemon. */
  async attach(sandbox) {
    return createHttpSandbox((sandbox as Sandbox<HttpNative>).native.url);
  },
} satisfies ConformanceHooks;

/** The factory: a fresh sandbox on the shared daemon. */
export default async function createSandbox(): Promise<Sandbox<HttpNative>> {
  return createHttpSandbox((await theDaemon()).url);
}
// #endregion hooks
