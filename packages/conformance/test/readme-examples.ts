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

// ---- packages/conformance/README.md -----------------------------------

// my-adapter.ts
export default () => createMySandbox();

const report = await runConformance({ factory: () => createMySandbox(), exclude: ['limits.*'] });
if (!report.ok) process.exitCode = 1;

describeConformance({ factory: () => createMySandbox() });

declare const daemon: { start(): Promise<void>; stop(): Promise<void> };
declare function attachToSameEnvironment(sandbox: Sandbox): Promise<Sandbox>;

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
};
