// The TypeScript examples of the root README and of this package's README,
// type-checked here (`npm run typecheck`); test/readme.test.ts checks that
// each README block stands in this file word for word. Never executed.
import { createLocalSandbox } from '@sandstream/adapter-local';
import type { Sandbox } from '@sandstream/types';
import { runConformance, type ConformanceHooks } from '../src/index.js';
import { describeConformance } from '../src/vitest.js';

// The adapter the examples prove, in their words.
const createMySandbox = () => createLocalSandbox();

// ---- README.md -------------------------------------------------------

export async function buildAndTest(): Promise<number | null> {
  // The default mode, isolation: 'none': your own trusted commands on your own files. It is a
  // process runner with teardown guarantees, not a security boundary (see "Isolation" below).
  await using sb = createLocalSandbox();

  // Buffered: byte-exact output plus convenient text.
  const status = await sb.run(['git', 'status', '--short'], { timeout: 10_000 });
  console.log(status.exitCode, status.stdoutText);

  // Streamed: the Process is an async iterable of tagged chunks and an async disposable.
  // Leaving this scope, however it is left, terminates the command and everything it started.
  await using proc = sb.stream(['npm', 'test'], { timeout: 300_000 });
  for await (const chunk of proc) {
    (chunk.stream === 'stdout' ? process.stdout : process.stderr).write(chunk.data);
  }
  const { exitCode, signal } = await proc.wait();
  if (signal !== null) console.error(`npm test was ended by ${signal}`);
  return exitCode;
}

describeConformance({ factory: createMySandbox });

export async function devServer(sb: Sandbox): Promise<void> {
  // Tool call 1: start a dev server and leave it running. Only detach() lets it outlive its
  // Process; the sandbox still owns it, and sb.close() ends it with everything it started.
  const server = sb.stream(['npm', 'run', 'dev'], { background: true });
  await server.started();
  const id = server.commandId!;
  await server.detach();

  // Tool call 2: attach by id, read what it printed from the start (or the last MiB or more,
  // with `skipped` counting the rest), and leave it running.
  const dev = await sb.attach!(id);
  for await (const chunk of dev) {
    if (new TextDecoder().decode(chunk.data).includes('ready')) {
      await dev.detach(); // without it, leaving the loop would end the server
      break;
    }
  }

  // Tool call 3: kill by id. Leaving the scope of an attached Process ends the command's tree
  // unless it was detached; an unknown id is CommandNotFound.
  await using doomed = await sb.attach!(id, { replay: false });
}

// ---- packages/conformance/README.md -----------------------------------

// my-adapter.ts
export default () => createMySandbox();

const report = await runConformance({ factory: () => createMySandbox(), exclude: ['limits.*'] });
if (!report.ok) process.exitCode = 1;

describeConformance({ factory: () => createMySandbox() });

declare const daemon: { start(): Promise<void>; stop(): Promise<void> };
declare function attachToSameEnvironment(sandbox: Sandbox): Promise<Sandbox>;
declare function environmentIdOf(sandbox: Sandbox): string;

export const conformanceHooks: ConformanceHooks = {
  // Once before the first case: start a daemon, open a connection.
  async setup() {
    await daemon.start();
  },
  // Once after the last case, also after failures and after a setup that threw.
  async teardown() {
    await daemon.stop();
  },
  // A second handle on the environment `sandbox` runs in (see below).
  async attach(sandbox) {
    return attachToSameEnvironment(sandbox);
  },
  // Spec 1.5: how a second OS process makes sandboxes on `sandbox`'s environment (see below).
  owner(sandbox) {
    return { env: { MY_ADAPTER_ENVIRONMENT: environmentIdOf(sandbox) } };
  },
};
