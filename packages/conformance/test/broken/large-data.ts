/**
 * Defects past a size: each handles what fits one pipe buffer or one
 * request and loses the rest, and each passed the kit while its cases sent
 * only data that small (one-shot input of 256 bytes, a few short variables
 * and arguments).
 */
import type { RunOptions, StdinWriter, StreamOptions } from '@sandstream/types';
import { isPlainObject } from '@sandstream/types/runtime';
import { EXACTLY_ONCE_THROUGH_TESTEE_MS, type BrokenAdapter } from './adapter.js';
import { omit, wrapSandbox, type SandboxDefects } from './wrap.js';

/** A pipe buffer on Linux. */
const PIPE_BUFFER = 64 * 1024;

/** `strings`, in order, cut to their first `limit` bytes of UTF-8 in all: the one crossing it cut short, the rest dropped. */
function cutStrings(strings: readonly string[], limit: number): string[] {
  const kept: string[] = [];
  let room = limit;
  for (const text of strings) {
    const bytes = Buffer.from(text, 'utf8');
    if (bytes.byteLength <= room) {
      kept.push(text);
      room -= bytes.byteLength;
      continue;
    }
    if (room > 0) kept.push(new TextDecoder().decode(bytes.subarray(0, room)).replace(/\uFFFD+$/, ''));
    break;
  }
  return kept;
}

/** Defects of an adapter that passes the env of both calls through `alter` (malformed options go on untouched). */
function alteringEnv(alter: (entries: Array<[string, string]>) => Array<[string, string]>): SandboxDefects {
  const altered = <T extends RunOptions | StreamOptions>(options: T | undefined): T | undefined =>
    isPlainObject(options) && isPlainObject(options.env)
      ? { ...options, env: Object.fromEntries(alter(Object.entries(options.env as Record<string, string>))) }
      : options;
  return {
    run: (inner, argv, options) => inner.run(argv, altered(options)),
    stream: (inner, argv, options) => inner.stream(argv, altered(options)),
  };
}

/** Defects of an adapter that passes the argv of both calls, after the program name, through `alter`. */
function alteringArgv(alter: (args: readonly string[]) => readonly string[]): SandboxDefects {
  const altered = (argv: readonly string[]): readonly string[] =>
    Array.isArray(argv) && argv.length > 0 && argv.every((arg) => typeof arg === 'string') ? [argv[0]!, ...alter(argv.slice(1))] : argv;
  return {
    run: (inner, argv, options) => inner.run(altered(argv), options),
    stream: (inner, argv, options) => inner.stream(altered(argv), options),
  };
}

/** `entries` cut to `limit` bytes of `NAME=VALUE` in all, as a backend passing them in a size-limited field would. */
function cutEntries(entries: Array<[string, string]>, limit: number): Array<[string, string]> {
  return cutStrings(entries.map(([name, value]) => `${name}=${value}`), limit)
    .filter((entry) => entry.includes('='))
    .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]);
}

/** A writer that passes on at most `limit` bytes of each write and drops the rest. */
function cuttingWriter(inner: StdinWriter, limit: number): StdinWriter {
  const encoder = new TextEncoder();
  return {
    get closed() {
      return inner.closed;
    },
    write(data) {
      const bytes = typeof data === 'string' ? encoder.encode(data) : data;
      return inner.write(bytes instanceof Uint8Array ? bytes.subarray(0, limit) : data);
    },
    end: () => inner.end(),
  };
}

export const largeDataAdapters: readonly BrokenAdapter[] = [
  {
    name: 'run-input-cut',
    defect: "run()'s one-shot input is cut after its first 4096 bytes (the rest is dropped, end-of-file follows)",
    create: (lab) =>
      wrapSandbox(lab.local(), {
        run(inner, argv, options) {
          const input = options?.input;
          if (input === undefined) return inner.run(argv, options);
          const bytes = typeof input === 'string' ? new TextEncoder().encode(input) : input;
          return inner.run(argv, { ...options, input: bytes instanceof Uint8Array ? bytes.subarray(0, 4096) : input });
        },
      }),
    caughtBy: { 'stdin.run-input': /what cat echoed of 1310977 bytes of input: bytes differ at offset 4096 \(got bytes\[4096\]/ },
    stillPasses: ['stdin.echo-and-eof', 'stdin.large-input'],
  },
  {
    name: 'stream-input-ignored',
    defect: 'stream() does not pass the input option on: the command reads end-of-file at once (run() passes it)',
    create: (lab) => wrapSandbox(lab.local(), { stream: (inner, argv, options) => inner.stream(argv, omit(options, 'input')) }),
    caughtBy: { 'stdin.run-input': /stream\(\) with input: the byte count the command read of 1310977 bytes: got '0', expected '1310977'/ },
    stillPasses: ['stdin.echo-and-eof'],
  },
  {
    name: 'env-cut',
    defect: 'env is cut to its first 64 KiB of NAME=VALUE entries: the variable crossing it is cut short, those after it are dropped',
    create: (lab) => wrapSandbox(lab.local(), alteringEnv((entries) => cutEntries(entries, PIPE_BUFFER))),
    caughtBy: { 'environment.env': /501 variables .* in env: 501 strings arrived .*: SANDSTREAM_LARGE \(100000 bytes\) arrived as \d+ bytes, expected 100000 \(cut short\)/ },
    stillPasses: ['environment.cwd'],
  },
  {
    name: 'env-count-cut',
    defect: 'only the first 256 variables of env are passed on',
    create: (lab) => wrapSandbox(lab.local(), alteringEnv((entries) => entries.slice(0, 256))),
    // SANDSTREAM_MANY_256 is empty (every 64th is), so the first to differ is the next.
    caughtBy: { 'environment.env': /SANDSTREAM_MANY_257 \(\d+ bytes\) arrived as 0 bytes, expected \d+ \(cut short\)/ },
    stillPasses: ['environment.cwd'],
  },
  {
    name: 'argv-cut',
    defect: 'argv is cut to its first 64 KiB after the program name: the element crossing it is cut short, those after it are dropped',
    create: (lab) => wrapSandbox(lab.local(), alteringArgv((args) => cutStrings(args, PIPE_BUFFER))),
    caughtBy: { 'arguments.argv-byte-exact': /501 arguments .* as the command received them: 501 strings arrived of the 501 given .*: argument 501 \(100000 bytes\) arrived as \d+ bytes, expected 100000 \(cut short\)/ },
    stillPasses: ['arguments.invalid-argv', 'environment.env'],
  },
  {
    name: 'argv-count-cut',
    defect: 'only the first 256 elements of argv are passed on',
    create: (lab) => wrapSandbox(lab.local(), alteringArgv((args) => args.slice(0, 255))),
    // printf and its format are the first two: 254 of the 501 arrive.
    caughtBy: { 'arguments.argv-byte-exact': /254 strings arrived of the 501 given .*: argument 255 \(\d+ bytes\) and every one after it are missing/ },
    // (environment.env fails too: its command names the variables in its argv.)
    stillPasses: ['arguments.invalid-argv', 'environment.cwd'],
  },
  {
    name: 'stdin-write-short',
    defect: 'each stdin write() passes on at most 64 KiB and drops the rest (a single write(2) whose short count is ignored)',
    create: (lab) => wrapSandbox(lab.local(), { process: { stdin: (inner) => cuttingWriter(inner, PIPE_BUFFER) } }),
    // The payload is random: a byte after the cut equals the one expected in 1 case of 256, so the
    // first difference is at the cut or, by chance, a few bytes on.
    caughtBy: { 'stdin.large-input': /what cat echoed: bytes differ at offset 65[5-9]\d\d \(got bytes\[\d+\], expected bytes\[6291456\]\)/ },
    stillPasses: ['stdin.echo-and-eof', 'stdin.exactly-once', 'stdin.run-input'],
    caseTimeoutMs: EXACTLY_ONCE_THROUGH_TESTEE_MS,
  },
  {
    name: 'stdin-write-one-request',
    defect: 'each stdin write() passes on at most 1 MiB and drops the rest (one request per write, to a service that takes at most 1 MiB)',
    create: (lab) => wrapSandbox(lab.local(), { process: { stdin: (inner) => cuttingWriter(inner, 1024 * 1024) } }),
    // The fifth write, 1.5 MiB from offset 400 000, loses its last 512 KiB: the first difference is
    // at 1 448 576, or a few bytes on where random bytes match by chance.
    caughtBy: { 'stdin.large-input': /what cat echoed: bytes differ at offset 1448[5-9]\d\d \(got bytes\[5767168\], expected bytes\[6291456\]\)/ },
    stillPasses: ['stdin.echo-and-eof', 'stdin.exactly-once', 'stdin.run-input'],
    caseTimeoutMs: EXACTLY_ONCE_THROUGH_TESTEE_MS,
  },
];
