// Shared Vitest settings. Process-heavy suites run in forks so that a
// misbehaving child cannot take a worker thread's event loop down with it.
import { defineConfig } from 'vitest/config';

export function sandstreamVitestConfig(overrides = {}) {
  return defineConfig({
    test: {
      pool: 'forks',
      testTimeout: 30_000,
      hookTimeout: 30_000,
      typecheck: { enabled: true, include: ['test/**/*.test-d.ts'], tsconfig: './tsconfig.json' },
      ...overrides,
    },
  });
}
