// The code of README.md, type-checked with the tests (`tsc -p tsconfig.json`)
// and run by readme.test.ts. Every ```ts block of the README, without its
// import lines, must appear verbatim in this file.
import { decodeExecResult, encodeExecResult, lines, StdinClosed, validatorFor } from '../src/index.js';
import type { ExecResult, Sandbox } from '../src/index.js';
import { defineSandbox, type DriverEvents, type ExitStatus, type ProcessDriver } from '../src/runtime/index.js';

/** Runs the test suite, printing its output as it comes; true when it passed. */
export async function runTests(sb: Sandbox): Promise<boolean> {
  await using proc = sb.stream(['npm', 'test'], { timeout: 300_000 });
  for await (const line of lines(proc)) {
    console.log(`[${line.stream}] ${line.text.trimEnd()}`);
  }
  const result = await proc.wait(); // streamed: true
  return result.exitCode === 0;
}

/** Sends a result through JSON and back: base64 bytes on the wire, no text views. */
export function roundTrip(result: ExecResult): ExecResult {
  const json = JSON.stringify(encodeExecResult(result));
  return decodeExecResult(JSON.parse(json)); // validated against the schema, then decoded
}

const isManifest = validatorFor('CapabilityManifest');

/** Lists what is wrong with a manifest, e.g. ['/streaming must be boolean']. */
export function manifestProblems(value: unknown): string[] {
  if (isManifest(value)) return [];
  return isManifest.issues.map((issue) => `${issue.instancePath} ${issue.message}`);
}

/** A toy backend whose commands print their argv and exit 0. */
function echoDriver(argv: readonly string[]): ProcessDriver {
  let sink: DriverEvents | undefined;
  let done = false;
  const finish = (status: ExitStatus): void => {
    if (done) return;
    done = true;
    sink?.exit(status);
  };
  return {
    async start(events) {
      sink = events;
      queueMicrotask(() => {
        if (done) return;
        events.output('stdout', new TextEncoder().encode(`${argv.join(' ')}\n`));
        finish({ exitCode: 0, signal: null });
      });
      return {};
    },
    async writeStdin() {
      throw new StdinClosed('this backend has no standard input');
    },
    async closeStdin() {},
    async signal(signal) {
      finish({ exitCode: null, signal });
    },
  };
}

export function createEchoSandbox(): Sandbox<undefined> {
  return defineSandbox({
    name: 'echo',
    capabilities: { streaming: true, stdin: false, 'resource-limits': false, user: false },
    native: undefined,
    createDriver: (command) => echoDriver(command.argv),
  });
}
