#!/usr/bin/env node
// The TypeScript testee's command (see bin/sandstream-conformance.js for why a committed file
// runs the built one): serves a JavaScript adapter module over the testee protocol.
import { existsSync } from 'node:fs';

const cli = new URL('../dist/testee-cli.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write(
    'sandstream-testee: the kit is not built (dist/testee-cli.js is missing).\n' +
      'In a clone of the repository, run `npm run build` at its root first.\n',
  );
  process.exit(2);
}
await import(cli.href);
