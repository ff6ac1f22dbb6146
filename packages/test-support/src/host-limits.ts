// The host-limit scenarios the adapters' tests share: a remote adapter's
// sandbox run out of descriptors, and a child process that reports in JSON.
// The limits themselves are @sandstream/host-limits' (re-exported here for
// the tests written against this module).
import { spawn } from 'node:child_process';
import { closeSync, openSync, readdirSync } from 'node:fs';
import { liftSelfLimits, limitSelf } from '@sandstream/host-limits';
import type { Process, Sandbox } from '@sandstream/types';

export { asUnusedUid, liftSelfLimits, limitSelf, limitSelfUnavailable, softLimits, type HostLimits } from '@sandstream/host-limits';

/** What one step of {@link runOutOfDescriptors} gave. */
export type StepOutcome = { readonly ok: unknown } | { readonly error: string; readonly code: string | undefined; readonly message: string };

/** What {@link runOutOfDescriptors} reports. */
export interface DescriptorsReport {
  readonly write: StepOutcome;
  readonly start: StepOutcome;
  readonly kept: StepOutcome;
  readonly ends: readonly StepOutcome[];
  readonly read: readonly string[];
  readonly after: StepOutcome;
}

/** What a promise gave: `{ ok: value }`, or the error's class, code and message. */
function outcome(promise: Promise<unknown>): Promise<StepOutcome> {
  return promise.then(
    (value) => ({ ok: value }),
    (error: unknown) => {
      const thrown = error as { constructor?: { name?: string }; code?: string; message?: unknown } | undefined;
      return { error: String(thrown?.constructor?.name), code: thrown?.code, message: String(thrown?.message) };
    },
  );
}

/** Everything a Process streams, as text; what arrived when the loop fails. */
function collectText(proc: Process): Promise<string> {
  let text = '';
  const decoder = new TextDecoder();
  return (async () => {
    for await (const chunk of proc) text += decoder.decode(chunk.data, { stream: true });
    return text;
  })().catch(() => text);
}

/**
 * Runs this process out of descriptors under `sandbox` (a remote adapter's,
 * whose emulator runs elsewhere): two commands wait for a line on standard
 * input; then a low limit, and every descriptor left held, while one
 * command is written to and another is started; then room again, the
 * other command is given its line and the first is killed. Resolves with
 * what each step gave: `write`, `start`, `kept` (the write once there is
 * room), `ends` (both commands' exit), `read` (their output), `after` (a
 * start once there is room), each an `{ ok }` or `{ error, code, message }`.
 */
export async function runOutOfDescriptors(sandbox: Sandbox): Promise<DescriptorsReport> {
  const script = 'read -r x; echo "got $x"; exit 3';
  const [cut, kept] = [sandbox.stream(['sh', '-c', script], { stdin: 'pipe' }), sandbox.stream(['sh', '-c', script], { stdin: 'pipe' })];
  await Promise.all([cut.started(), kept.started()]);
  const read = [collectText(cut), collectText(kept)];
  // Iterated first: wait() alone would discard the output.
  const ends = [cut, kept].map((proc) => outcome(proc.wait().then((r) => ({ exitCode: r.exitCode, signal: r.signal }))));
  await limitSelf({ openFiles: readdirSync('/proc/self/fd').length + 8 });
  const held: number[] = [];
  for (;;) {
    try {
      held.push(openSync('/dev/null', 'r'));
    } catch {
      break;
    }
  }
  const write = await outcome(cut.stdin!.write('lost\n'));
  const start = await outcome(sandbox.run(['echo', 'refused']));
  for (const fd of held) closeSync(fd);
  await liftSelfLimits();
  // The command whose write failed still waits for input nobody can vouch for: ended by its owner.
  const keptWrite = await outcome(kept.stdin!.write('hello\n').then(() => kept.stdin!.end()));
  await cut.kill();
  return {
    write,
    start,
    kept: keptWrite,
    ends: await Promise.all(ends),
    read: await Promise.all(read),
    after: await outcome(sandbox.run(['echo', 'after']).then((r) => r.stdoutText)),
  };
}

/**
 * Runs `argv` (a Node.js script that prints one JSON document) as a child
 * process, SIGKILLed after `boundMs`; resolves with its exit status, the
 * parsed document (undefined when its output was not JSON) and its stderr.
 */
export async function runJsonChild<T = unknown>(
  argv: readonly string[],
  { env = process.env, boundMs = 120_000 }: { readonly env?: NodeJS.ProcessEnv; readonly boundMs?: number } = {},
): Promise<{ readonly code: number | null; readonly report: T | undefined; readonly stderr: string }> {
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env });
  let out = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text) => (out += text));
  child.stderr.setEncoding('utf8').on('data', (text) => (stderr += text));
  const timer = setTimeout(() => child.kill('SIGKILL'), boundMs);
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve)).finally(() => clearTimeout(timer));
  let report: T | undefined;
  try {
    report = JSON.parse(out) as T;
  } catch {
    report = undefined;
  }
  return { code, report, stderr };
}
