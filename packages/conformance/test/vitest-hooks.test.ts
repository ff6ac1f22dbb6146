import { afterAll, expect } from 'vitest';
import { createLocalSandbox } from '@sandstream/adapter-local';
import { describeConformance } from '../src/vitest.js';

// describeConformance runs the module's setup before the first sandbox and its teardown
// after the last case; the factory refuses to work outside that window.
const events: string[] = [];
let connected = false;

describeConformance({
  factory: () => {
    if (!connected) throw new Error('the factory was called outside setup()/teardown()');
    events.push('factory');
    return createLocalSandbox({ graceMs: 300 });
  },
  hooks: {
    setup: () => {
      connected = true;
      events.push('setup');
    },
    teardown: () => {
      connected = false;
      events.push('teardown');
    },
  },
  include: ['stream.synchronous', 'result.exit-codes'],
});

// Runs after the suite's own afterAll, so teardown has run.
afterAll(() => {
  expect(events[0]).toBe('setup');
  expect(events.at(-1)).toBe('teardown');
  expect(events.filter((e) => e === 'factory').length).toBeGreaterThanOrEqual(3);
});
