/**
 * The value form of the testee protocol (spec 1.3, section 18.3): what a
 * caller passed, or an adapter returned, written as JSON without losing what
 * JSON cannot carry. The cases pass invalid arguments on purpose (a `NaN`
 * timeout, a symbol in argv, a string `onOutput`) and check the key the
 * adapter names, so arguments cross as the caller gave them and the adapter
 * judges them, never the kit (ADR-0038).
 *
 * JSON values are themselves; everything else is a one-key object whose key
 * begins with `$`. A plain object whose own keys begin with `$` is wrapped in
 * `$object`, so no value is ever mistaken for one of these forms.
 */
import { base64ToBytes, bytesToBase64, type WireValue } from '@sandstream/types';

/** A value as it travels: JSON, with one-key `$` forms for the rest (the spec's `WireValue`). */
export type { WireValue };

/** What the encoder does with the values only one side can hold: callbacks and abort signals. */
export interface ValueHooks {
  /** A function the caller passed: an id the other side calls it by, and whether it throws (marked by the case). */
  readonly fn?: (fn: (...args: never[]) => unknown) => { id: string; throws: boolean };
  /** An AbortSignal: an id the other side's signal is aborted by. */
  readonly signal?: (signal: AbortSignal) => string;
}

/** What the decoder does with `$function` and `$signal` forms. */
export interface ValueMakers {
  readonly fn?: (id: string, throws: boolean) => (...args: unknown[]) => unknown;
  readonly signal?: (id: string, aborted: boolean, reason: unknown) => AbortSignal;
}

/** Marks a callback a case gives an adapter as one that throws, so that a testee's stand-in throws at the call too. */
export const CALLBACK_THROWS: unique symbol = Symbol.for('sandstream.testee.callback-throws');

/** Marks `fn` as a callback that throws (see {@link CALLBACK_THROWS}); a direct run calls it as it is. */
export function throwingCallback<F extends (...args: never[]) => unknown>(fn: F): F {
  return Object.assign(fn, { [CALLBACK_THROWS]: true });
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * Sets an own, enumerable property, whatever its name: assigning `__proto__`
 * would set the object's prototype instead, and an environment variable of
 * that name (a valid one) would be lost on the way.
 */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Writes `value` in the value form. Never throws: what it cannot carry becomes `$other`, which no adapter should accept. */
export function encodeValue(value: unknown, hooks: ValueHooks = {}, seen = new Set<object>()): WireValue {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : { $number: String(value) };
    case 'undefined':
      return { $undefined: true };
    case 'bigint':
      return { $bigint: value.toString() };
    case 'symbol':
      return { $other: value.toString() };
    case 'function': {
      if (hooks.fn === undefined) return { $other: 'a function' };
      const { id, throws } = hooks.fn(value as (...args: never[]) => unknown);
      return { $function: id, throws };
    }
    default:
      break;
  }
  if (value === null) return null;
  const object = value as object;
  if (ArrayBuffer.isView(object)) {
    const view = object as ArrayBufferView;
    return { $bytes: bytesToBase64(new Uint8Array(view.buffer, view.byteOffset, view.byteLength)) };
  }
  if (typeof AbortSignal !== 'undefined' && object instanceof AbortSignal) {
    if (hooks.signal === undefined) return { $other: 'an AbortSignal' };
    return { $signal: hooks.signal(object), aborted: object.aborted, reason: object.aborted ? encodeValue(object.reason, {}, seen) : null };
  }
  if (seen.has(object)) return { $other: 'a circular reference' };
  seen.add(object);
  try {
    if (Array.isArray(object)) return Array.from(object, (item) => encodeValue(item, hooks, seen));
    if (object instanceof Error) return { $other: `${object.name}: ${object.message}` };
    if (!isPlainObject(object)) return { $other: Object.prototype.toString.call(object) };
    const out: Record<string, WireValue> = {};
    let dollar = false;
    for (const [key, item] of Object.entries(object)) {
      if (key.startsWith('$')) dollar = true;
      setOwn(out, key, encodeValue(item, hooks, seen));
    }
    return dollar ? { $object: out } : out;
  } finally {
    seen.delete(object);
  }
}

/** A value the testee protocol has no form for (spec 1.3 section 18.3): a fault of the link, not of an adapter. */
export class MalformedValue extends TypeError {
  override readonly name = 'MalformedValue';
}

/** Reads a value written by {@link encodeValue} (or by a testee in any language); throws {@link MalformedValue}. */
export function decodeValue(wire: unknown, makers: ValueMakers = {}): unknown {
  if (wire === null || typeof wire !== 'object') return wire;
  if (Array.isArray(wire)) return wire.map((item) => decodeValue(item, makers));
  const object = wire as Record<string, unknown>;
  const keys = Object.keys(object);
  const form = keys.find((key) => key.startsWith('$'));
  if (form === undefined) {
    const out: Record<string, unknown> = {};
    for (const key of keys) setOwn(out, key, decodeValue(object[key], makers));
    return out;
  }
  const body = object[form];
  switch (form) {
    case '$bytes':
      return base64ToBytes(String(body));
    case '$undefined':
      return undefined;
    case '$number':
      return Number(body);
    case '$bigint':
      try {
        return BigInt(String(body));
      } catch {
        throw new MalformedValue(`a $bigint that is no integer: ${JSON.stringify(body)}`);
      }
    case '$other':
      // Something only the caller's language has: a value of a type no adapter accepts.
      return Symbol(String(body));
    case '$object': {
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(body as Record<string, unknown>)) setOwn(out, key, decodeValue(item, makers));
      return out;
    }
    case '$function':
      return makers.fn === undefined ? Symbol('a function') : makers.fn(String(body), object['throws'] === true);
    case '$signal':
      return makers.signal === undefined ? Symbol('an AbortSignal') : makers.signal(String(body), object['aborted'] === true, decodeValue(object['reason']));
    default:
      throw new MalformedValue(`an unknown value form ${JSON.stringify(form)}`);
  }
}
