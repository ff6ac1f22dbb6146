#!/usr/bin/env node
/**
 * `sandstream-testee <adapter-module>`: serves a JavaScript adapter over the
 * testee protocol on standard input and output, for
 * `sandstream-conformance --testee "sandstream-testee <module>"`. Standard
 * output belongs to the protocol: what the adapter prints goes to standard error.
 */
import { loadAdapter, UsageError } from './adapter-module.js';
import { serveTestee } from './testee/serve.js';

const USAGE = 'Usage: sandstream-testee <adapter-module>\n\nServes the adapter module (its default export a factory, and its conformanceHooks) over the\ntestee protocol on standard input and output.';

async function main(argv: readonly string[]): Promise<number> {
  if (argv.length !== 1 || argv[0] === '-h' || argv[0] === '--help') {
    process.stderr.write(`${USAGE}\n`);
    return argv.length === 1 ? 0 : 2;
  }
  // The protocol owns standard output; an adapter that logs must not corrupt it.
  const protocolOut = process.stdout;
  const write = process.stderr.write.bind(process.stderr);
  console.log = (...args: unknown[]) => void write(`${args.map(String).join(' ')}\n`);
  const { factory, hooks } = await loadAdapter(argv[0]!);
  await serveTestee({ factory, hooks }, process.stdin, protocolOut);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`sandstream-testee: ${error instanceof UsageError ? '' : 'the testee failed: '}${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(2);
  },
);
