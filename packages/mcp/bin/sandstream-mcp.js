#!/usr/bin/env node
// The server's command. npm links a package's bin only if the file exists when it installs the
// package, and in a clone of the repository dist/ is built after `npm ci`: a bin pointing into
// dist/ would be left unlinked. This file is committed, so the link is made at install time; it
// runs the built CLI, or says how to build it.
import { existsSync } from 'node:fs';

const cli = new URL('../dist/cli.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write(
    'sandstream-mcp: the server is not built (dist/cli.js is missing).\n' +
      'In a clone of the repository, run `npm run build` at its root first.\n',
  );
  process.exit(2);
}
await import(cli.href);
