/**
 * The testee protocol's value form (spec 1.3, section 18.3) keeps every own
 * key of a plain object, `__proto__` included: an environment variable may
 * have that name, and a testee must receive it as the caller gave it.
 */
import { describe, test } from 'vitest';
import { decodeValue, encodeValue } from '../src/testee/values.js';

describe('the value form', () => {
  test('an own "__proto__" key crosses both ways as a key, not as a prototype', ({ expect }) => {
    const env = JSON.parse('{"__proto__":"$(id)","A":"b"}') as Record<string, unknown>;
    const wire = encodeValue({ env });
    expect(JSON.parse(JSON.stringify(wire))).toEqual(JSON.parse('{"env":{"__proto__":"$(id)","A":"b"}}'));
    const back = decodeValue(JSON.parse('{"env":{"__proto__":"x","A":{"$bytes":"AA=="}}}')) as { env: Record<string, unknown> };
    expect(Object.keys(back.env)).toEqual(['__proto__', 'A']);
    expect(Object.getPrototypeOf(back.env)).toBe(Object.prototype);
    expect(back.env['__proto__']).toBe('x');
    const wrapped = decodeValue(JSON.parse('{"$object":{"__proto__":1,"$x":2}}')) as Record<string, unknown>;
    expect(Object.keys(wrapped)).toEqual(['__proto__', '$x']);
  });
});
