/** Loading an adapter module the way the CLIs do: a file, or a package (or its subpath) installed here. */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { resolve as resolveImport } from 'import-meta-resolve';
import type { SandboxFactory } from '@sandstream/types';
import { codeOf } from './assert.js';
import { checkHooks, type ConformanceHooks } from './hooks.js';
import { typeScriptAdvice } from './typescript-advice.js';

/** A mistake in how a CLI was called (exit 2, with the usage). */
export class UsageError extends Error {}

/** The adapter module exists but cannot be loaded as it is (a harness error, exit 2). */
export class AdapterModuleError extends Error {}

/**
 * Resolves a package name (or a subpath of one) as an `import` from a module
 * in `from` would: Node's own ES module resolution, its `exports` conditions
 * included, through import-meta-resolve (Node 20 cannot resolve from another
 * parent without a flag). Undefined when nothing of that name is installed.
 */
function resolvePackage(name: string, from: string): string | undefined {
  try {
    const url = resolveImport(name, pathToFileURL(join(from, 'noop.js')).href);
    return url.startsWith('file:') ? fileURLToPath(url) : undefined;
  } catch (error) {
    const code = codeOf(error);
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'ERR_UNSUPPORTED_DIR_IMPORT') return undefined;
    // The parent named in the message is a stand-in for the current directory.
    const why = (error instanceof Error ? error.message : String(error)).replace(/ imported from .*$/s, '');
    throw new UsageError(`cannot load ${JSON.stringify(name)} from ${from}: ${why}`);
  }
}

/**
 * The adapter module: its default export (the factory), its optional
 * `conformanceHooks`, and the file it was loaded from, which an owner
 * process loads in turn (`ownerModule`, spec 1.4's `owner.crash`).
 */
export async function loadAdapter(specifier: string): Promise<{ factory: SandboxFactory; hooks: ConformanceHooks; ownerModule: string }> {
  const path = resolve(specifier);
  const file = existsSync(path) ? path : resolvePackage(specifier, process.cwd());
  if (file === undefined) throw new UsageError(`cannot find ${JSON.stringify(specifier)}: neither a file nor a package installed here`);
  const module = (await import(pathToFileURL(file).href).catch((error: unknown) => {
    throw codeOf(error) === 'ERR_UNKNOWN_FILE_EXTENSION' && /\.[cm]?tsx?$/.test(file) ? new AdapterModuleError(typeScriptAdvice(specifier)) : error;
  })) as { default?: unknown; conformanceHooks?: unknown };
  if (typeof module.default !== 'function') {
    throw new UsageError(`${specifier} has no default export that is a factory function`);
  }
  let hooks: ConformanceHooks;
  try {
    hooks = checkHooks(module.conformanceHooks, 'conformanceHooks');
  } catch (error) {
    throw new UsageError(`${specifier} exports a malformed conformanceHooks: ${error instanceof Error ? error.message : String(error)}`);
  }
  return { factory: module.default as SandboxFactory, hooks, ownerModule: file };
}

