/**
 * The reason a command whose program was not found failed to start. When the
 * program's name holds whitespace, the caller most likely passed a shell
 * line as one argv element (`run(['ls -la'])`): argv is never run by a shell
 * (SS-ARG-1), so the message says how to write it instead.
 */
export function noSuchExecutable(argv: readonly string[], where = ''): string {
  const program = argv[0] ?? '';
  const reason = `ENOENT: no such executable ${JSON.stringify(program)}${where}`;
  const words = program.trim().split(/\s+/);
  if (words.length < 2) return reason;
  const split = listed([...words, ...argv.slice(1)]);
  const shell = argv.length === 1 ? ` or ${listed(['sh', '-c', program])}` : '';
  return `${reason}; argv is not a shell command line: use ${split}${shell}`;
}

/** An argv written as a JavaScript array literal. */
function listed(argv: readonly string[]): string {
  return `[${argv.map((arg) => `'${arg.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`).join(', ')}]`;
}
