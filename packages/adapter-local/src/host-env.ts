/**
 * Which of this process's variables a sandbox's commands see. The plain
 * mode's default is all of them (its commands run as this process's
 * account anyway); the isolated mode's, only the allowlist, so that a
 * secret in the host's environment (an API key, a token) stays out of a
 * sandbox meant for code nobody has read.
 */
import { InvalidArgument } from '@sandstream/types';
import { inheritedEnv } from '@sandstream/types/runtime';

const describe = (value: unknown): string => (typeof value === 'string' ? JSON.stringify(value) : Array.isArray(value) ? 'an array' : value === null ? 'null' : typeof value);

/**
 * The host variables passed by default where only named ones are: the
 * search path, the home (the isolated mode puts the sandbox's own in its
 * place), the terminal type and the locale (`LANG`, `LANGUAGE` and every
 * `LC_*`), without which programs misread text and print the wrong language.
 */
export const HOST_ENV_ALLOWLIST: readonly string[] = Object.freeze(['PATH', 'HOME', 'TERM', 'LANG', 'LANGUAGE', 'LC_*']);

function allowed(name: string): boolean {
  return HOST_ENV_ALLOWLIST.includes(name) || /^LC_[A-Z_]+$/.test(name);
}

/**
 * Checks `options.hostEnv`: an array of variable names (non-empty, without
 * `=` or NUL).
 *
 * @throws InvalidArgument naming the offending entry.
 */
export function validateHostEnv(value: unknown): readonly string[] {
  if (!Array.isArray(value)) throw new InvalidArgument('options.hostEnv', `must be an array of variable names, got ${describe(value)}`);
  return Object.freeze(
    value.map((name: unknown, index) => {
      if (typeof name !== 'string' || name === '' || name.includes('=') || name.includes('\0')) {
        throw new InvalidArgument(`options.hostEnv[${index}]`, `must be a variable name (non-empty, without "=" or NUL), got ${describe(name)}`);
      }
      return name;
    }),
  );
}

/**
 * This process's variables that are allowlisted ({@link HOST_ENV_ALLOWLIST})
 * or named in `names`; a named variable this process does not have is left
 * out.
 */
export function allowedHostEnv(names: readonly string[]): Record<string, string> {
  const env = inheritedEnv();
  for (const name of Object.keys(env)) if (!allowed(name) && !names.includes(name)) delete env[name];
  return env;
}
