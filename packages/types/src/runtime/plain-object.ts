/**
 * True for an object literal or an `Object.create(null)` object: what an
 * options bag may be. Arrays, class instances, `Map`s and `null` are not.
 * The one check every option validator of the runtime and the adapters uses.
 */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}
