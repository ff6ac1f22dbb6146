import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { ConformanceHooks } from '@sandstream/conformance';
import type { SandboxFactory } from '@sandstream/types';

/** What the kit is given for one run: the factory and the hooks that start and stop the backend. */
export interface KitTarget {
  readonly factory: SandboxFactory;
  readonly hooks: ConformanceHooks;
}

/** Which side of a vendor a run judges: the thin wrapper of its SDK, or the project's adapter. */
export type Side = 'raw' | 'adapter';

/**
 * One vendor of the page. Adding one is a module like `e2b-vendor.ts` and
 * an entry of `VENDORS` in `vendors.ts`, plus its explanations in
 * `explanations.ts`.
 */
export interface Vendor {
  /** Key of its record and of its explanations. */
  readonly id: string;
  /** Its heading on the page. */
  readonly title: string;
  /** The SDK or client library wrapped, by package name (its installed version is stated). */
  readonly sdk: string;
  /** The project's adapter for it, by package name: run on the same backend, as the control. */
  readonly adapter: string;
  /** The backend both runs use, in words. */
  readonly backend: string;
  /** How each call of the contract maps onto the SDK, one line each. */
  readonly wrapping: readonly string[];
  /** A fresh kit target for a run of one side; its hooks start and stop the backend. */
  open(side: Side): KitTarget;
}

/** The installed version of a package (the exact version the workspace pins). */
export function installedVersion(name: string): string {
  const require = createRequire(import.meta.url);
  // From the package's entry up to the package.json that names it (its exports may hide ./package.json).
  let dir = dirname(require.resolve(name));
  for (;;) {
    try {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (manifest.name === name && typeof manifest.version === 'string') return manifest.version;
    } catch {
      // No package.json here: go on up.
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json of ${name} above its entry point`);
    dir = parent;
  }
}
