/**
 * The hint a refused start gets when its argv looks like a shell line. argv
 * is never run by a shell (SS-ARG-1), so `run(['ls -la'])` looks for a
 * program named "ls -la" and every backend refuses it as not found; the
 * runtime, which every adapter shares, says how to write it instead, so each
 * backend's own wording of "not found" gets the same hint.
 */
import { SpawnFailed } from '../errors.js';

/** A backend's "not found", in the wordings they give: errno's name, or the words. */
const NOT_FOUND = /\bENOENT\b|\bnot found\b|\bno such (?:file|executable|program|command)\b/i;

/**
 * `error` itself, or, when it is `SpawnFailed` for a program that was not
 * found and whose name holds whitespace, a `SpawnFailed` (caused by it) whose
 * message ends with how to write that argv.
 */
export function withArgvHint(error: unknown, argv: readonly string[]): unknown {
  if (!(error instanceof SpawnFailed) || !NOT_FOUND.test(error.message)) return error;
  const program = argv[0] ?? '';
  const words = program.trim().split(/\s+/);
  if (words.length < 2) return error;
  const split = listed([...words, ...argv.slice(1)]);
  const shell = argv.length === 1 ? ` or ${listed(['sh', '-c', program])}` : '';
  const prefix = `could not start ${JSON.stringify(program)}: `;
  const reason = error.message.startsWith(prefix) ? error.message.slice(prefix.length) : error.message;
  return new SpawnFailed(argv, `${reason}; argv is not a shell command line: use ${split}${shell}`, { cause: error });
}

/** An argv written as a JavaScript array literal. */
function listed(argv: readonly string[]): string {
  return `[${argv.map((arg) => `'${arg.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`).join(', ')}]`;
}
