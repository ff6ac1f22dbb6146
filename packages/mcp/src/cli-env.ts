// Which of the server's own variables reach the sandbox: `--env NAME`, by
// adapter. The server is often started by an MCP client with the user's
// whole environment (API keys, tokens), and the sandbox runs what a model
// wrote: nothing of that environment goes in unless a name asks for it.
import { BUILT_IN_ADAPTERS } from './adapter.js';

/** A command line the server cannot run with: exit 2 and the usage. */
export class UsageError extends Error {}

const REMOTE = new Set<string>(['e2b', 'vercel', 'docker'] satisfies (keyof typeof BUILT_IN_ADAPTERS)[]);

/** Checks the `--env` names: a name, not an assignment (the value is the server's, never the command line's). */
export function validateEnvNames(names: readonly string[]): readonly string[] {
  for (const name of names) {
    if (name === '' || name.includes('=') || name.includes('\0')) {
      throw new UsageError(`--env takes a variable name (non-empty, without "=" or NUL), got ${JSON.stringify(name)}; its value is taken from the server's environment`);
    }
  }
  return names;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The factory options with the `--env` names applied:
 *
 * - `local`: `hostEnv` is always set (the names, after any `hostEnv` of
 *   `--options`), so the plain mode too gets only adapter-local's allowlist
 *   of the server's variables besides the named ones, not all of them.
 * - `e2b`, `vercel`, `docker`: the named variables' values are added to the
 *   factory's `env` (every command's variables, a call's own `env` over
 *   them), over an `env` of `--options`. These sandboxes never see the
 *   server's environment otherwise.
 * - a module path: `--env` is a usage error; the module decides its own
 *   environment, and gets what it needs through `--options`.
 *
 * A named variable the server does not have is left out, and reported
 * through `warn`.
 */
export function applyEnvNames(
  adapter: string,
  options: Record<string, unknown>,
  names: readonly string[],
  hostEnv: NodeJS.ProcessEnv = process.env,
  warn: (message: string) => void = () => {},
): Record<string, unknown> {
  for (const name of names) if (hostEnv[name] === undefined) warn(`--env ${name}: the server's environment has no ${name}; the sandbox gets none`);
  if (adapter === 'local') {
    // A hostEnv of --options that is no array is passed on as it is, for the adapter to reject with its own message.
    const given = options['hostEnv'];
    return { ...options, hostEnv: Array.isArray(given) ? [...(given as unknown[]), ...names] : (given ?? [...names]) };
  }
  if (names.length === 0) return options;
  if (!REMOTE.has(adapter)) {
    throw new UsageError('--env applies to the built-in adapters (local, e2b, vercel, docker); a module of yours decides its own environment: pass it what it needs with --options');
  }
  const given = options['env'];
  if (given !== undefined && !isObject(given)) throw new UsageError('--options env must be an object of strings to take the --env variables');
  const named = Object.fromEntries(names.flatMap((name) => (hostEnv[name] === undefined ? [] : [[name, hostEnv[name]]])));
  return { ...options, env: { ...given, ...named } };
}
