/**
 * `@sandstream/adapter-e2b/conformance`, the module's face for the conformance kit: a default-export
 * factory and `conformanceHooks`, both configured from the environment.
 *
 * - `E2B_API_KEY` and `E2B_SANDBOX_ID` set: that E2B sandbox, borrowed
 *   (never killed): how a second OS process joins a run's sandbox (the
 *   `owner` hook, spec 1.4).
 * - `E2B_API_KEY` set: one real E2B sandbox for the whole run (template
 *   `E2B_TEMPLATE`, else the SDK's default), created in `setup()` and
 *   killed in `teardown()`; every factory call is a handle on it that does
 *   not own it.
 * - else `E2B_SANDBOX_URL` set: the envd at that URL, through the SDK's
 *   debug mode.
 * - else: `setup()` starts the envd emulator of this package, and the
 *   factory's handles run on it.
 */
import { severLinks } from '@sandstream/remote';
import { Sandbox as E2BSdkSandbox } from 'e2b';
import type { ConformanceHooks } from '@sandstream/conformance';
import { InvalidArgument, type Process, type Sandbox } from '@sandstream/types';
import { createE2BSandbox } from './index.js';

/**
 * The kit's hooks (`ConformanceHooks` of `@sandstream/conformance`), every one of which this module
 * exports. A type-only import: the module needs the kit at no time but when the kit loads it.
 */
export type E2BConformanceHooks = Required<ConformanceHooks>;

interface Shared {
  sandbox: E2BSdkSandbox;
  owned: boolean;
  /** Where a second OS process finds the same sandbox (`owner`). */
  env: Record<string, string>;
  stop?: () => Promise<void>;
  /**
   * On the emulator: its record base (its commands share the host's `/tmp`), and no `user`
   * unless it runs as root (only then can it switch accounts).
   */
  options?: { capabilities?: { user: false }; recordBase: string };
}

let shared: Shared | undefined;

async function connect(): Promise<Shared> {
  const apiKey = process.env['E2B_API_KEY'];
  const id = process.env['E2B_SANDBOX_ID'];
  if (apiKey !== undefined && apiKey !== '' && id !== undefined && id !== '') {
    return { sandbox: await E2BSdkSandbox.connect(id), owned: false, env: { E2B_SANDBOX_ID: id } };
  }
  if (apiKey !== undefined && apiKey !== '') {
    const template = process.env['E2B_TEMPLATE'];
    const sandbox = template ? await E2BSdkSandbox.create(template) : await E2BSdkSandbox.create();
    return { sandbox, owned: true, env: { E2B_SANDBOX_ID: sandbox.sandboxId } };
  }
  const url = process.env['E2B_SANDBOX_URL'];
  if (url !== undefined && url !== '') {
    return { sandbox: await E2BSdkSandbox.create({ debug: true, sandboxUrl: url }), owned: false, env: { E2B_SANDBOX_URL: url } };
  }
  const { startEnvdEmulator } = await import('./emulator/index.js');
  const emulator = await startEnvdEmulator();
  const sandbox = await E2BSdkSandbox.create({ debug: true, sandboxUrl: emulator.url });
  return {
    sandbox,
    owned: false,
    env: { E2B_SANDBOX_URL: emulator.url },
    stop: () => emulator.close(),
    options: { recordBase: emulator.recordBase, ...(process.getuid?.() === 0 ? {} : { capabilities: { user: false } }) },
  };
}

/** Lifecycle and observation hooks of this adapter module for the conformance kit. */
export const conformanceHooks: E2BConformanceHooks = {
  async setup() {
    shared ??= await connect();
  },
  async teardown() {
    const current = shared;
    shared = undefined;
    if (current === undefined) return;
    if (current.owned) await current.sandbox.kill().catch(() => undefined);
    await current.stop?.();
  },
  async attach(sandbox: Sandbox) {
    // A second handle on the same E2B sandbox; its close() never kills it.
    return createE2BSandbox({ sandbox: sandbox.native as E2BSdkSandbox, owned: false, ...shared?.options });
  },
  sever(process: Process) {
    return severLinks(process);
  },
  owner() {
    if (shared === undefined) throw new InvalidArgument('conformanceHooks', 'setup() has not run');
    return { env: shared.env };
  },
};

/** The conformance kit's entry point: a handle on the run's sandbox per call (see the module comment). */
export default async function createSandbox(): Promise<Sandbox<E2BSdkSandbox>> {
  if (shared === undefined) {
    throw new InvalidArgument(
      'conformanceHooks',
      'setup() has not run: the kit calls it before the first case (it connects to E2B when E2B_API_KEY is set, else to E2B_SANDBOX_URL, else starts the envd emulator)',
    );
  }
  return createE2BSandbox({ sandbox: shared.sandbox, owned: false, ...shared.options });
}
