// One fuzz case run and judged: the call made the way the spec says its
// errors arrive, and the outcome checked against what the input calls for.
import { expect } from 'vitest';
import {
  AbortError,
  CapabilityNotSupported,
  InvalidArgument,
  SpawnFailed,
  StdinClosed,
  type ExecResult,
  type Process,
  type Sandbox,
} from '@sandstream/types';
import { within } from '../timing.js';
import { hex, parseEcho, utf8Hex } from './echo.js';
import type { Mode } from './inputs.js';

/** What a call gave. */
export interface Outcome {
  result?: ExecResult;
  stdout?: Uint8Array;
  error?: unknown;
  thrownSynchronously?: boolean;
  synchronous?: boolean;
  writeErrors?: unknown[];
  disposeError?: unknown;
}

/** What a case must give: a refusal of some kind, or a run whose echo matches. */
export interface Expected {
  invalid?: Set<string>;
  capability?: string[];
  aborted?: boolean;
  unknownUser?: boolean;
  short?: boolean;
  spawnFails?: boolean;
  cap?: number;
  args?: string[];
  env?: Record<string, string>;
  cwdHex?: string;
  stdinHex?: string;
  collected?: Uint8Array[];
}

/** Settles the call the way the spec says its errors arrive: a Process's synchronously, a run's as a rejection. */
export async function call(
  sandbox: Sandbox,
  mode: Mode,
  argv: string[],
  options: unknown,
  boundMs: number,
  writes: ReadonlyArray<string | Uint8Array> = [],
): Promise<Outcome> {
  if (mode === 'run') {
    let promise: Promise<ExecResult>;
    try {
      // Options of every shape, valid or not: the point is what the sandbox makes of them.
      promise = sandbox.run(argv, options as never);
    } catch (error) {
      return { thrownSynchronously: true, error };
    }
    try {
      const result = await within(boundMs, promise, 'run()');
      return { result, stdout: result.stdout };
    } catch (error) {
      return { error };
    }
  }
  let proc: Process;
  try {
    proc = sandbox.stream(argv, options as never);
  } catch (error) {
    return { error, synchronous: true };
  }
  // A write to a command that never started, or has ended, rejects with StdinClosed; what the
  // call gives is then decided by iteration and wait(), as the spec puts it.
  let writeErrors: unknown[] = [];
  let outcome: Outcome;
  try {
    if ((options as { stdin?: unknown } | undefined)?.stdin === 'pipe') {
      // Not awaited one by one: the writes reach the command in call order however many are in flight.
      const pending = [...writes.map((data) => proc.stdin!.write(data)), proc.stdin!.end()];
      const settled = await within(boundMs, Promise.allSettled(pending), 'stdin writes');
      writeErrors = settled.filter((entry): entry is PromiseRejectedResult => entry.status === 'rejected').map((entry) => entry.reason as unknown);
    }
    const parts: Uint8Array[] = [];
    await within(
      boundMs,
      (async () => {
        for await (const chunk of proc) if (chunk.stream === 'stdout') parts.push(chunk.data);
      })(),
      'iteration',
    );
    const result = await within(boundMs, proc.wait(), 'wait()');
    outcome = { result, stdout: Buffer.concat(parts), writeErrors };
  } catch (error) {
    outcome = { error, writeErrors };
  }
  // Disposing a settled Process resolves, whatever the command did.
  try {
    await within(boundMs, proc[Symbol.asyncDispose](), 'disposal');
  } catch (error) {
    outcome.disposeError = error;
  }
  return outcome;
}

function describeError(error: unknown): string {
  return error instanceof Error ? `${error.constructor.name} ${(error as { code?: string }).code ?? ''}: ${error.message}` : String(error);
}

/**
 * Checks an outcome against the expectation; returns the outcome's class for the tally.
 * `expected`: { invalid: Set<string> } | { capability: string[] } | { aborted } | { unknownUser } | { spawnFails } | { ok, short, cap, env, args, cwdHex }.
 */
export function judge(outcome: Outcome, expected: Expected, mode: Mode): string {
  const { result } = outcome;
  // Its class is checked before a field of it is read.
  const error = outcome.error as (Error & { code?: string; key?: string; capability?: string }) | undefined;
  if (outcome.disposeError !== undefined) throw new Error(`disposing the settled Process failed: ${describeError(outcome.disposeError)}`, { cause: outcome.disposeError });
  for (const failed of outcome.writeErrors ?? []) {
    expect(failed, `a write rejected with ${describeError(failed)}`).toBeInstanceOf(StdinClosed);
  }
  if (mode === 'run' && outcome.thrownSynchronously) {
    throw new Error(`run() threw synchronously instead of rejecting: ${describeError(error)}`);
  }
  if (expected.invalid !== undefined) {
    expect(error, `expected InvalidArgument naming one of ${[...expected.invalid].join(', ')}`).toBeInstanceOf(InvalidArgument);
    expect(error?.code).toBe('INVALID_ARGUMENT');
    // An option's key, or the path to the offending entry inside it (`options.limits.cpuSeconds`).
    const key = String(error?.key);
    const named = [...expected.invalid].some((name) => key === name || (name.startsWith('options.') && key.startsWith(`${name}.`)));
    expect(named, `InvalidArgument key ${JSON.stringify(key)}, expected one of ${JSON.stringify([...expected.invalid])}`).toBe(true);
    if (mode === 'stream') expect(outcome.synchronous, 'stream() throws InvalidArgument synchronously').toBe(true);
    return 'invalid';
  }
  if (expected.capability !== undefined) {
    expect(error, `expected CapabilityNotSupported(${expected.capability.join(' or ')})`).toBeInstanceOf(CapabilityNotSupported);
    expect(expected.capability).toContain(error?.capability);
    return 'capability';
  }
  if (expected.unknownUser) {
    if (expected.aborted && error instanceof AbortError) return 'aborted';
    if (error instanceof InvalidArgument) {
      expect(error.key).toBe('options.user');
      if (mode === 'stream') expect(outcome.synchronous, 'stream() throws InvalidArgument synchronously').toBe(true);
      return 'unknown user refused';
    }
    if (expected.short && error === undefined && result?.timedOut) return 'timed out';
    expect(error, `an unknown account: InvalidArgument or SpawnFailed${expected.aborted ? ' (or AbortError)' : ''}, got ${error === undefined ? 'a result' : describeError(error)}`).toBeInstanceOf(SpawnFailed);
    return 'unknown user failed';
  }
  if (expected.aborted) {
    expect(error, 'an already aborted signal: AbortError').toBeInstanceOf(AbortError);
    return 'aborted';
  }
  if (expected.short && (error !== undefined || result?.timedOut)) {
    // A timeout shorter than the command may end it first, a start failure included.
    if (error !== undefined && !(error instanceof SpawnFailed)) throw new Error(`expected a result or SpawnFailed, got ${describeError(error)}`, { cause: error });
    return 'timed out';
  }
  if (expected.spawnFails) {
    expect(error, `expected SpawnFailed, got ${error === undefined ? 'a result' : describeError(error)}`).toBeInstanceOf(SpawnFailed);
    return 'spawn failed';
  }
  if (error !== undefined) throw new Error(`expected the command to run, got ${describeError(error)}`, { cause: error });
  if (result === undefined) throw new Error('the call gave neither a result nor an error');
  expect(result.timedOut).toBe(false);
  expect(outcome.writeErrors ?? [], 'writes to a command that ran and read them all').toEqual([]);
  const stdoutText = Buffer.from(outcome.stdout ?? new Uint8Array()).toString('latin1');
  if (expected.cap !== undefined && result.stdoutTruncated) {
    expect(result.stdout.byteLength).toBe(expected.cap);
    return 'capped';
  }
  const echo = parseEcho(stdoutText);
  const diagnosis = `stdout ${JSON.stringify(stdoutText.slice(0, 400))}, stderr ${JSON.stringify(Buffer.from(result.stderr).toString('utf8').slice(0, 400))}`;
  expect(result.exitCode, diagnosis).toBe(0);
  expect(echo, diagnosis).toBeDefined();
  if (echo === undefined) return 'no echo';
  expect(echo.args, 'argv as the command saw it (hex of the UTF-8)').toEqual((expected.args ?? []).map(utf8Hex));
  for (const [name, value] of Object.entries(expected.env ?? {})) {
    expect(echo.env.get(utf8Hex(name)), `variable ${JSON.stringify(name)} as the command saw it (hex of the UTF-8)`).toEqual([utf8Hex(value)]);
  }
  if (expected.cwdHex !== undefined) expect(echo.cwd, 'working directory (hex of pwd -P)').toBe(expected.cwdHex);
  // One-shot input, a string as UTF-8; without it, standard input is at end-of-file.
  expect(echo.stdin, 'standard input as the command read it (hex)').toBe(expected.stdinHex ?? '');
  if (expected.collected !== undefined && !result.stdoutTruncated) {
    expect(hex(Buffer.concat(expected.collected)), 'onOutput saw what the result holds').toBe(hex(result.stdout));
  }
  return 'round trip';
}

