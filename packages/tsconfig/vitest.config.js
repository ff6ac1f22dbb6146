// Shared Vitest settings. Process-heavy suites run in forks so that a
// misbehaving child cannot take a worker thread's event loop down with it.
import { configDefaults, defineConfig } from 'vitest/config';

/**
 * `overrides` go into `test`. `slow` lists the package's test files (globs
 * relative to the package) that the fast loop leaves out: `vitest run --mode
 * fast`, each package's `test:fast` script and the root's `npm run test:fast`.
 * A file belongs there when it needs a Docker Engine, runs the kit in full
 * (on an adapter, every broken adapter or through a testee), kills owner
 * processes and waits out their bounds, fuzzes, sweeps faults, moves tens of
 * MiB, starts command lines as processes of their own, or soaks; `npm test`
 * and CI run every file whatever the list says. A new test file is in the
 * fast loop until it is listed.
 *
 * `alone` maps a mode to files that must have the machine to themselves (a
 * load on every core, gVisor's ptrace platform): `vitest run --mode <mode>`
 * runs exactly those, one file at a time, and every other run leaves them
 * out (the root's `npm test` runs each such mode after the packages' tests).
 * They are left out of the fast loop too.
 *
 * `isolated` lists files that mock modules (`vi.mock`) or stub what modules
 * read as they load (the environment): the fast loop, whose other files
 * share their workers' module graphs, loads theirs afresh.
 *
 * In the fast loop, tests see `SANDSTREAM_TEST_LOOP=fast`: a file that runs
 * the same tests under several shells may run them under one there (it says
 * so), while `npm test` runs them under all.
 */
export function sandstreamVitestConfig(overrides = {}, { slow = [], alone = {}, isolated = [] } = {}) {
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
      // tests to `npm run typecheck`, whose tsconfig includes test/ too. Its files share their
      // workers' module graphs (isolate: false): loading the graph again for every file was about
      // a third of the loop's CPU. Files that mock modules (`isolated`) get fresh ones.
      ...(mode === 'fast' ? fastLoop([...configDefaults.exclude, ...aloneFiles, ...slow], isolated) : {}),
      ...(only !== undefined ? { include: only, exclude: [...configDefaults.exclude], fileParallelism: false } : {}),
      ...overrides,
    };
    return { test };
  });
}

/** The fast loop's settings: the files left out, and those that must load their modules afresh. */
function fastLoop(exclude, isolated) {
  const settings = { exclude, maxWorkers: 2, isolate: false, typecheck: { enabled: false }, env: { SANDSTREAM_TEST_LOOP: 'fast' } };
  if (isolated.length === 0) return settings;
  return {
    ...settings,
    projects: [
      { extends: true, test: { name: 'fresh modules', include: isolated, isolate: true } },
      // Said again here: a project that extends the root did not take its `isolate: false`, and
      // every file of these packages started a worker of its own (30 in the kit's package).
      { extends: true, test: { name: 'shared modules', exclude: [...exclude, ...isolated], isolate: false } },
    ],
  };
}
