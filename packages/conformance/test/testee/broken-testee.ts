/**
 * A testee serving one broken adapter of ../broken, chosen by
 * SANDSTREAM_BROKEN_NAME (or the real local adapter, `local`), in the lab
 * whose marker is SANDSTREAM_LAB_MARKER, so the test that started it finds
 * and cleans up what its sandboxes leave. Built by tsconfig.testee.json.
 */
import { BROKEN_ADAPTERS, Lab } from '../broken/index.js';
import { serveTestee } from '../../src/testee/serve.js';

const name = process.env['SANDSTREAM_BROKEN_NAME'] ?? '';
const marker = process.env['SANDSTREAM_LAB_MARKER'];
const lab = new Lab(name, marker);
const adapter = BROKEN_ADAPTERS.find((a) => a.name === name);
if (adapter === undefined && name !== 'local') {
  process.stderr.write(`broken-testee: no broken adapter named ${JSON.stringify(name)}\n`);
  process.exit(2);
}
await serveTestee({ factory: () => (adapter === undefined ? lab.local() : adapter.create(lab)) });
process.exit(0);
