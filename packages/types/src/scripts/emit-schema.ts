// Writes the generated spec documents: `emit-schema <directory>` writes
// schema.json (exact), reader.json (for consumers pinned to 1.x) and
// testee.json (the testee protocol's messages) there.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildSpecDocument, buildTesteeDocument, serializeSpecDocument } from '../spec-document.js';

const target = process.argv[2];
if (!target) {
  process.stderr.write('usage: emit-schema <directory>\n');
  process.exit(2);
}
const directory = resolve(target);
mkdirSync(directory, { recursive: true });
writeFileSync(join(directory, 'schema.json'), serializeSpecDocument(buildSpecDocument('exact')));
writeFileSync(join(directory, 'reader.json'), serializeSpecDocument(buildSpecDocument('reader')));
writeFileSync(join(directory, 'testee.json'), serializeSpecDocument(buildTesteeDocument()));
