import type { ExecResult, ExecResultData } from './schema/exec-result.js';

// ignoreBOM: a leading byte-order mark is part of what the command wrote.
const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
const EMPTY = new Uint8Array(0);

function lazyText(target: object, name: 'stdoutText' | 'stderrText', bytes: Uint8Array): void {
  let cached: string | undefined;
  Object.defineProperty(target, name, {
    enumerable: false,
    get: () => (cached ??= decoder.decode(bytes)),
  });
}

/**
 * Builds an {@link ExecResult} from its data fields, adding the lazily
 * decoded `stdoutText` / `stderrText` views. They are non-enumerable, so
 * JSON and spread see only the data of the schema.
 *
 * @example
 * ```ts
 * import { createExecResult } from '@sandstream/types';
 * const result = createExecResult({ exitCode: 0, stdout: new TextEncoder().encode('ok\n') });
 * result.stdoutText; // 'ok\n'
 * ```
 */
export function createExecResult(fields: {
  readonly [K in keyof ExecResultData]?: ExecResultData[K] | undefined;
}): ExecResult {
  const data: ExecResultData = {
    exitCode: fields.exitCode ?? null,
    signal: fields.signal ?? null,
    stdout: fields.stdout ?? EMPTY,
    stderr: fields.stderr ?? EMPTY,
    streamed: fields.streamed ?? false,
    timedOut: fields.timedOut ?? false,
    stdoutTruncated: fields.stdoutTruncated ?? false,
    stderrTruncated: fields.stderrTruncated ?? false,
    durationMs: fields.durationMs ?? 0,
  };
  lazyText(data, 'stdoutText', data.stdout);
  lazyText(data, 'stderrText', data.stderr);
  return Object.freeze(data) as ExecResult;
}
