import { InvalidArgument } from '../errors.js';
import { describeValue } from './describe-value.js';
import { isPlainObject } from './plain-object.js';

/** Sets a variable as an own property, so that even `__proto__` is one. */
function defineVariable(env: Record<string, string>, name: string, value: string): void {
  Object.defineProperty(env, name, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * A copy of this process's environment with the unset entries left out: the
 * default base environment of a local backend. Each variable is an own
 * property, so even one named `__proto__` is copied.
 */
export function inheritedEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined) defineVariable(env, name, value);
  return env;
}

/**
 * Checks an environment given as an option (`key` names it in errors, as
 * `options.env` for a command's): a plain object of strings, each name
 * non-empty without `=` or NUL, each value without NUL. Returns a frozen
 * copy, so a caller mutating its object later cannot change what runs.
 *
 * @throws InvalidArgument naming the offending entry.
 */
export function validateEnv(value: unknown, key = 'options.env'): Readonly<Record<string, string>> {
  if (!isPlainObject(value)) {
    throw new InvalidArgument(key, `must be an object of strings, got ${describeValue(value)}`);
  }
  const env: Record<string, string> = {};
  for (const [name, entry] of Object.entries(value)) {
    const entryKey = `${key}.${name}`;
    if (name === '' || name.includes('=') || name.includes('\0')) {
      throw new InvalidArgument(entryKey, 'a variable name must be non-empty and contain neither "=" nor NUL');
    }
    if (typeof entry !== 'string') throw new InvalidArgument(entryKey, `must be a string, got ${describeValue(entry)}`);
    if (entry.includes('\0')) throw new InvalidArgument(entryKey, 'must not contain a NUL character');
    defineVariable(env, name, entry);
  }
  return Object.freeze(env);
}
