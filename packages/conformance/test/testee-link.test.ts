/**
 * The link to a testee once it is closed: a request made after `close()` is
 * refused at once with a HarnessError saying so, instead of waiting on a
 * testee that has left (spec 1.3 section 18.1, ADR-0038). The testee is the
 * TypeScript one serving the real local adapter.
 */
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';
import { HarnessError } from '../src/index.js';
import { TesteeLink } from '../src/testee/link.js';

const command = {
  command: process.execPath,
  args: [fileURLToPath(new URL('../dist/testee-cli.js', import.meta.url)), fileURLToPath(import.meta.resolve('@sandstream/adapter-local'))],
  forwardStderr: false,
};

test('a request after close() is refused with a HarnessError, each way in', { timeout: 60_000 }, async () => {
  const { link } = await TesteeLink.open(command);
  // The control: the same requests are answered while the link is open.
  await expect(link.request('ping', {})).resolves.toBeDefined();
  const closed = await link.close();
  expect(closed.error).toBeUndefined();
  await expect(link.request('ping', {})).rejects.toThrow(HarnessError);
  await expect(link.request('ping', {})).rejects.toThrow(/closed/);
  expect(() => link.requestSync('manifest', { sandbox: 's1' })).toThrow(/closed/);
  expect(() => link.requestTwoStep('run', { sandbox: 's1', argv: ['true'], options: {} } as never)).toThrow(/closed/);
  // A closed link is not a failed one: no fault is reported for the run.
  expect(link.fatal).toBeUndefined();
  // Closing again is the same close.
  expect(await link.close()).toEqual(closed);
});
