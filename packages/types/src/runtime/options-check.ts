import type { CapabilityManifest } from '../schema/capability.js';
import { InvalidArgument } from '../errors.js';
import { isPlainObject } from './plain-object.js';

/**
 * The one option checker of every adapter: an options bag must be a plain
 * object whose every own key is one the adapter knows. An unknown key is a
 * typo or an option of another adapter, and silently ignoring it would run
 * the command under settings the caller did not ask for.
 *
 * @param value - what the caller passed.
 * @param allowed - the keys the adapter knows.
 * @param path - how the error names the bag (default `options`).
 * @throws InvalidArgument naming the first unknown key (`options.<key>`), or
 * the bag itself when it is not a plain object.
 *
 * @example
 * ```ts
 * import { checkOptionKeys } from '@sandstream/types/runtime';
 * checkOptionKeys({ graceMs: 100 }, ['graceMs', 'env']);
 * // checkOptionKeys({ gracems: 100 }, ['graceMs']) throws InvalidArgument('options.gracems', 'unknown option')
 * ```
 */
export function checkOptionKeys(value: unknown, allowed: Iterable<string>, path = 'options'): void {
  if (!isPlainObject(value)) throw new InvalidArgument(path, 'must be an object');
  const known = allowed instanceof Set ? (allowed as ReadonlySet<string>) : new Set(allowed);
  for (const key of Object.keys(value)) {
    if (!known.has(key)) throw new InvalidArgument(`${path}.${key}`, 'unknown option');
  }
}

/**
 * A duration or size option: a non-negative finite number, or `fallback`
 * when absent.
 *
 * @throws InvalidArgument naming `options.<name>`.
 *
 * @example
 * ```ts
 * import { nonNegativeOption } from '@sandstream/types/runtime';
 * const graceMs = nonNegativeOption('graceMs', undefined, 2000); // 2000
 * ```
 */
export function nonNegativeOption(name: string, value: unknown, fallback: number): number;
/** As above, with no fallback: `undefined` when absent. */
export function nonNegativeOption(name: string, value: unknown): number | undefined;
export function nonNegativeOption(name: string, value: unknown, fallback?: number): number | undefined {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new InvalidArgument(`options.${name}`, 'must be a non-negative finite number');
  }
  return value;
}

/**
 * The `capabilities` option every adapter takes: an object of booleans
 * that turns capabilities off, never on (what the backend cannot do stays
 * off). Returns `available` with those turned off.
 *
 * @throws InvalidArgument naming `options.capabilities.<name>` for a name
 * `available` does not have (own keys only: `toString` is no capability)
 * or a value that is not a boolean.
 *
 * @example
 * ```ts
 * import { capabilitiesOption } from '@sandstream/types/runtime';
 * const manifest = capabilitiesOption({ user: false }, { streaming: true, stdin: true, 'resource-limits': true, user: true });
 * // manifest.user === false
 * ```
 */
export function capabilitiesOption(value: unknown, available: CapabilityManifest): CapabilityManifest {
  const capabilities = { ...available };
  if (value === undefined) return capabilities;
  if (!isPlainObject(value)) throw new InvalidArgument('options.capabilities', 'must be an object of booleans');
  for (const [name, enabled] of Object.entries(value)) {
    const key = `options.capabilities.${name}`;
    if (!Object.hasOwn(available, name)) throw new InvalidArgument(key, 'unknown capability');
    if (enabled === undefined) continue;
    if (typeof enabled !== 'boolean') throw new InvalidArgument(key, 'must be a boolean');
    if (!enabled) capabilities[name as keyof CapabilityManifest] = false;
  }
  // A replay and a reconnect are promises of attach (SS-CAP-3): attach off takes them with it.
  if (capabilities.attach !== true) {
    for (const name of ['attach-reconnect', 'replay-full', 'replay-tail'] as const) if (Object.hasOwn(capabilities, name)) capabilities[name] = false;
  }
  return capabilities;
}
