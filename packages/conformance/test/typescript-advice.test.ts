import { describe, expect, test } from 'vitest';
import { typeScriptAdvice } from '../src/typescript-advice.js';

describe('the advice for a TypeScript adapter module', () => {
  test('on Node 20: build it, or a loader; no type stripping to offer', () => {
    const advice = typeScriptAdvice('adapter.ts', '20.20.2');
    expect(advice).toMatch(/Node\.js 20\.20\.2 cannot import TypeScript by itself\. Build the adapter to JavaScript \(tsc\)/);
    expect(advice).toMatch(/NODE_OPTIONS='--import tsx' npx sandstream-conformance adapter\.ts$/);
    expect(advice).not.toMatch(/strip-types/);
  });

  test('from Node 22.6: Node\'s own type stripping too', () => {
    expect(typeScriptAdvice('adapter.ts', '22.5.1')).not.toMatch(/strip-types/);
    expect(typeScriptAdvice('adapter.ts', '22.6.0')).toMatch(/NODE_OPTIONS=--experimental-strip-types npx sandstream-conformance adapter\.ts$/);
    expect(typeScriptAdvice('adapter.ts', '24.1.0')).toMatch(/--experimental-strip-types/);
  });
});
