/** The isolated mode's `mounts` option: host paths bound into the sandbox, checked before anything is made. */
import { statSync } from 'node:fs';
import { isAbsolute, posix, resolve } from 'node:path';
import { InvalidArgument } from '@sandstream/types';
import { checkOptionKeys, isPlainObject } from '@sandstream/types/runtime';
import type { IsolatedMount } from './isolation/environment.js';

const MOUNT_KEYS = new Set(['source', 'target', 'readonly']);

function validPath(value: unknown): value is string {
  return typeof value === 'string' && value !== '' && !value.includes('\0');
}

/**
 * Checks `options.mounts`: each entry `{ source, target?, readonly? }`, the
 * source an existing absolute host path, the target an absolute path
 * outside `/proc` and `/dev` (default: the source), read-only unless
 * `readonly: false`.
 *
 * @throws InvalidArgument naming the entry's key.
 */
export function validateMounts(value: unknown): IsolatedMount[] {
  if (!Array.isArray(value)) throw new InvalidArgument('options.mounts', 'must be an array');
  return value.map((entry: unknown, index) => {
    const key = `options.mounts[${index}]`;
    if (!isPlainObject(entry)) throw new InvalidArgument(key, 'must be an object');
    checkOptionKeys(entry, MOUNT_KEYS, key);
    const { source, target = source, readonly = true } = entry;
    if (!validPath(source) || !isAbsolute(source)) throw new InvalidArgument(`${key}.source`, 'must be an absolute path without NUL');
    try {
      statSync(source);
    } catch {
      throw new InvalidArgument(`${key}.source`, `${JSON.stringify(source)} does not exist on this host`);
    }
    if (!validPath(target) || !target.startsWith('/')) throw new InvalidArgument(`${key}.target`, 'must be an absolute path without NUL');
    const normal = posix.normalize(target).replace(/\/+$/, '');
    if (normal === '' || /^\/(proc|dev)(\/|$)/.test(normal)) {
      throw new InvalidArgument(`${key}.target`, 'must not be /, nor lie under /proc or /dev');
    }
    if (typeof readonly !== 'boolean') throw new InvalidArgument(`${key}.readonly`, 'must be a boolean');
    return { source: resolve(source), target: normal, readonly };
  });
}

