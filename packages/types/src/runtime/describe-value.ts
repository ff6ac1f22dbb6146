/** A value as an error message names it: `null`, `an array`, `number 3`. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Uint8Array) return 'a Uint8Array';
  return typeof value === 'object' ? 'an object' : `${typeof value} ${String(value)}`;
}
