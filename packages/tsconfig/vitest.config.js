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
 *
 * `alone` maps a mode to files that must have the machine to themselves (a
 * load on every core, gVisor's ptrace platform): `vitest run --mode <mode>`
 * runs exactly those, one file at a time, and every other run leaves them
 * out (the root's `npm test` runs each such mode after the packages' tests).
 * They are left out of the fast loop too.
 */
export function sandstreamVitestConfig(overrides = {}, { slow = [], alone = {} } = {}) {
  const aloneFiles = Object.values(alone).flat();
  return defineConfig(({ mode }) => {
    const only = alone[mode];
    const test = {
      pool: 'forks',
      testTimeout: 30_000,
      hookTimeout: 30_000,
      typecheck: { enabled: true, include: ['test/**/*.test-d.ts'], tsconfig: './tsconfig.json' },
      exclude: [...configDefaults.exclude, ...aloneFiles],
      // The fast loop also runs two files of a package at once (turbo runs two packages at once):
      // most of its files wait on processes and timers rather than on the CPU. It leaves the type
      // tests to `npm run typecheck`, whose tsconfig includes test/ too.
      ...(mode === 'fast'
        ? { exclude: [...configDefaults.exclude, ...aloneFiles, ...slow], maxWorkers: 2, typecheck: { enabled: false } }
        : {}),
      ...(only !== undefined ? { include: only, exclude: [...configDefaults.exclude], fileParallelism: false } : {}),
      ...overrides,
    };
    return { test };
  });
}
