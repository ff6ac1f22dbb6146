/**
 * The link to a testee: a callback runs in the async context of the call
 * that handed it over, as in a direct run, so what it sets off is charged to
 * its case; and once the link is closed, a request is refused at once with a
 * HarnessError saying so, instead of waiting on a testee that has left (spec
 * 1.3 sections 18.1 and 18.5, ADR-0038). The testee is the TypeScript one
 * serving the real local adapter.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';
import { HarnessError } from '../src/index.js';
import { connectTestee } from '../src/testee/connect.js';
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
  // From the moment close() is called, not only once it resolved: a case's body still running
  // after its verdict must not wait the link's whole bound on a testee that is leaving.
  const closing = link.close();
  expect(() => link.requestSync('manifest', { sandbox: 's1' })).toThrow(/closed: the run is over/);
  const closed = await closing;
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

test("onOutput runs in the context of the run() that passed it, each callback in its own", { timeout: 60_000 }, async () => {
  const { factory, link } = await connectTestee(command);
  try {
    const sandbox = await factory();
    const storage = new AsyncLocalStorage<string>();
    const seen: Record<string, Set<string | undefined>> = { first: new Set(), second: new Set() };
    const runIn = (name: 'first' | 'second') =>
      storage.run(name, () => sandbox.run(['sh', '-c', 'echo one; echo two >&2'], { onOutput: () => void seen[name]!.add(storage.getStore()) }));
    await Promise.all([runIn('first'), runIn('second')]);
    expect(seen.first).toEqual(new Set(['first']));
    expect(seen.second).toEqual(new Set(['second']));
    await sandbox.close();
  } finally {
    await link.close();
  }
});
