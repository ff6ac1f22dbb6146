// Which sandbox the command line asks for: a built-in adapter by name, or a
// module whose export gives one (the convention of the conformance kit's CLI:
// a default export that is a factory, here also a `createSandbox` export).
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Sandbox } from '@sandstream/types';

/** The adapters `--adapter` knows by name: the package and the factory it exports. */
export const BUILT_IN_ADAPTERS = {
  local: { packageName: '@sandstream/adapter-local', factory: 'createLocalSandbox' },
  e2b: { packageName: '@sandstream/adapter-e2b', factory: 'createE2BSandbox' },
  vercel: { packageName: '@sandstream/adapter-vercel', factory: 'createVercelSandbox' },
  docker: { packageName: '@sandstream/adapter-docker', factory: 'createDockerSandbox' },
} as const;

/** The adapter could not be loaded or gave no sandbox. `code` says why. */
export class AdapterLoadError extends Error {
  constructor(
    /** `ADAPTER_NOT_INSTALLED`: a built-in adapter's package is not installed; `ADAPTER_NOT_FOUND`: no such file; `ADAPTER_INVALID`: the module gives no factory, or the factory no sandbox. */
    readonly code: 'ADAPTER_NOT_INSTALLED' | 'ADAPTER_NOT_FOUND' | 'ADAPTER_INVALID',
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'AdapterLoadError';
  }
}

type Factory = (options: Record<string, unknown>) => Sandbox | Promise<Sandbox>;

function isSandbox(value: unknown): value is Sandbox {
  const candidate = value as Partial<Sandbox> | null;
  return typeof candidate === 'object' && candidate !== null && typeof candidate.stream === 'function' && typeof candidate.close === 'function';
}

/** The factory a package exports under `factory`; `name` is what `--adapter` called it. Exported for the tests. */
export async function importPackageFactory(name: string, packageName: string, factory: string): Promise<Factory> {
  let module: Record<string, unknown>;
  try {
    module = (await import(packageName)) as Record<string, unknown>;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    // Only the package itself missing; a dependency of it missing is its own error, passed on.
    if (code === 'ERR_MODULE_NOT_FOUND' && String((error as Error).message).startsWith(`Cannot find package '${packageName}'`)) {
      throw new AdapterLoadError('ADAPTER_NOT_INSTALLED', `--adapter ${name} needs ${packageName}: install it beside @sandstream/mcp (npm install ${packageName})`, { cause: error });
    }
    throw error;
  }
  const create = module[factory];
  if (typeof create !== 'function') throw new AdapterLoadError('ADAPTER_INVALID', `${packageName} exports no ${factory}`);
  return create as Factory;
}

async function importModule(specifier: string): Promise<Factory> {
  const file = resolve(specifier);
  if (!existsSync(file)) throw new AdapterLoadError('ADAPTER_NOT_FOUND', `${JSON.stringify(specifier)} is neither a built-in adapter (${Object.keys(BUILT_IN_ADAPTERS).join(', ')}) nor a file`);
  const module = (await import(pathToFileURL(file).href)) as { default?: unknown; createSandbox?: unknown };
  const create = typeof module.createSandbox === 'function' ? module.createSandbox : module.default;
  if (typeof create !== 'function') throw new AdapterLoadError('ADAPTER_INVALID', `${specifier} exports neither createSandbox nor a default factory function`);
  return create as Factory;
}

/**
 * Opens the sandbox `adapter` names: `local`, `e2b`, `vercel`, `docker` (their
 * packages' factories, given `options`), or the path of a module whose
 * `createSandbox` export, else its default export, is a factory (called with
 * `options`). Rejects with {@link AdapterLoadError} when it cannot.
 */
export async function openSandbox(adapter: string, options: Record<string, unknown> = {}): Promise<Sandbox> {
  const builtIn = Object.hasOwn(BUILT_IN_ADAPTERS, adapter) ? BUILT_IN_ADAPTERS[adapter as keyof typeof BUILT_IN_ADAPTERS] : undefined;
  const factory = builtIn === undefined ? await importModule(adapter) : await importPackageFactory(adapter, builtIn.packageName, builtIn.factory);
  const sandbox = await factory(options);
  if (!isSandbox(sandbox)) throw new AdapterLoadError('ADAPTER_INVALID', `the factory of ${adapter} did not return a Sandbox`);
  return sandbox;
}
