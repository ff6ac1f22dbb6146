/** Loading an adapter module the way the CLIs do: a file, or a package (or its subpath) installed here. */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { SandboxFactory } from '@sandstream/types';
import { codeOf } from './assert.js';
import { checkHooks, type ConformanceHooks } from './hooks.js';
import { typeScriptAdvice } from './typescript-advice.js';

/** A mistake in how a CLI was called (exit 2, with the usage). */
export class UsageError extends Error {}

/** The adapter module exists but cannot be loaded as it is (a harness error, exit 2). */
export class AdapterModuleError extends Error {}

/** The `import` (or `default`) target of a package's `exports` for its root. */
function exportTarget(exports: unknown): string | undefined {
  if (typeof exports === 'string') return exports;
  if (typeof exports !== 'object' || exports === null) return undefined;
  const map = exports as Record<string, unknown>;
  if ('.' in map) return exportTarget(map['.']);
  for (const condition of ['import', 'node', 'default']) {
    const target = exportTarget(map[condition]);
    if (target !== undefined) return target;
  }
  return undefined;
}

/** The target of a subpath (`./conformance`) in a package's `exports`, its conditions read as for the root. */
function subpathTarget(exports: unknown, subpath: string): string | undefined {
  if (typeof exports !== 'object' || exports === null || !(subpath in exports)) return undefined;
  return exportTarget((exports as Record<string, unknown>)[subpath]);
}

/**
 * Resolves a package name as an ES module import from the current directory
 * would: up through the node_modules folders, then the package's `exports`
 * (import conditions included) or `main`; a subpath (`pkg/conformance`)
 * through its `exports` entry, else as a file of the package.
 */
function resolvePackage(name: string, from: string): string | undefined {
  const [scopeOrName, rest] = name.startsWith('@') ? [name.split('/').slice(0, 2).join('/'), name.split('/').slice(2).join('/')] : [name.split('/')[0]!, name.split('/').slice(1).join('/')];
  for (let dir = from; ; dir = dirname(dir)) {
    const root = join(dir, 'node_modules', scopeOrName);
    const manifest = join(root, 'package.json');
    if (existsSync(manifest)) {
      const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { exports?: unknown; main?: string };
      if (rest !== '') return join(root, subpathTarget(pkg.exports, `./${rest}`) ?? rest);
      const target = exportTarget(pkg.exports) ?? pkg.main ?? 'index.js';
      return join(root, target);
    }
    if (dirname(dir) === dir) return undefined;
  }
}

/** The adapter module: its default export (the factory) and its optional `conformanceHooks`. */
export async function loadAdapter(specifier: string): Promise<{ factory: SandboxFactory; hooks: ConformanceHooks }> {
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
  return { factory: module.default as SandboxFactory, hooks };
}

