// Writes the generated spec document to the path given on the command line.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { serializeSpecDocument } from '../spec-document.js';

const target = process.argv[2];
if (!target) {
  process.stderr.write('usage: emit-schema <output.json>\n');
  process.exit(2);
}
const path = resolve(target);
mkdirSync(dirname(path), { recursive: true });
writeFileSync(path, serializeSpecDocument());
