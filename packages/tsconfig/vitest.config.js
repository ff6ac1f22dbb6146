// Shared Vitest settings. Process-heavy suites run in forks so that a
// misbehaving child cannot take a worker thread's event loop down with it.
import { configDefaults, defineConfig } from 'vitest/config';

/**
 * `overrides` go into `test`. `slow` lists the package's test files (globs
 * relative to the package) that the fast loop leaves out: `vitest run --mode
 * fast`, each package's `test:fast` script and the root's `npm run test:fast`.
 * A file belongs there when it needs a Docker Engine, runs the kit in full
 * (on an adapter, every broken adapter or through a testee), kills owner
 * processes and waits out their bounds, fuzzes an adapter's options, sweeps a
 * fault matrix, or soaks; `npm test` and CI run every file whatever the list
 * says. A new test file is in the fast loop until it is listed.
 */
export function sandstreamVitestConfig(overrides = {}, { slow = [] } = {}) {
  return defineConfig(({ mode }) => ({
    test: {
      pool: 'forks',
      testTimeout: 30_000,
      hookTimeout: 30_000,
      typecheck: { enabled: true, include: ['test/**/*.test-d.ts'], tsconfig: './tsconfig.json' },
      // The fast loop also runs two files of a package at once (turbo runs two packages at once):
      // most of its files wait on processes and timers rather than on the CPU. It leaves the type
      // tests to `npm run typecheck`, whose tsconfig includes test/ too.
      ...(mode === 'fast'
        ? { exclude: [...configDefaults.exclude, ...slow], maxWorkers: 2, typecheck: { enabled: false } }
        : {}),
      ...overrides,
    },
  }));
}
