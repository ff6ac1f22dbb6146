import { afterAll, expect } from 'vitest';
import { createLocalSandbox } from '@sandstream/adapter-local';
import type { StreamOptions } from '@sandstream/types';
import { describeConformance } from '../src/vitest.js';

// The Vitest entry keeps the leak warning teardown.garbage-collected provokes
// on purpose from the process's warning listeners (Node's printer among
// them), and passes an adapter's own warning on. This file's recorder stands
// in for them, alone (so the adapter's warning below is not printed): it was
// listening before the suite started.
const heard: Array<string | undefined> = [];
const recorder = (warning: Error & { code?: string }): void => void heard.push(warning.code);
const displaced = process.rawListeners('warning') as Array<(warning: Error) => void>;
process.removeAllListeners('warning');
process.on('warning', recorder);

describeConformance({
  factory: () => {
    const sandbox = createLocalSandbox({ graceMs: 300 });
    const stream = sandbox.stream.bind(sandbox);
    sandbox.stream = ((argv: readonly string[], options?: StreamOptions) => {
      if (argv.join(' ') === 'sleep 5') process.emitWarning('the adapter\'s own warning', { code: 'X_ADAPTER_WARNING' });
      return stream(argv, options);
    }) as typeof sandbox.stream;
    return sandbox;
  },
  include: ['teardown.garbage-collected', 'stream.synchronous'],
});

// Runs after the suite's own afterAll, which gave the listeners back.
afterAll(() => {
  process.off('warning', recorder);
  for (const listener of displaced) process.on('warning', listener);
  expect(heard).toEqual(['X_ADAPTER_WARNING']);
});
