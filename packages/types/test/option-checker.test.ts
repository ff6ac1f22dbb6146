/**
 * The one option checker every adapter uses, and the one `prlimit` prefix
 * (adapter-local and adapter-e2b had one each).
 */
import { describe, expect, it } from 'vitest';
import { InvalidArgument } from '../src/index.js';
import { capabilitiesOption, checkOptionKeys, nonNegativeOption, prlimitArgs } from '../src/runtime/index.js';

function thrown(fn: () => unknown): InvalidArgument {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidArgument);
    return error as InvalidArgument;
  }
  throw new Error('did not throw');
}

describe('checkOptionKeys', () => {
  it('accepts known keys and rejects the first unknown one by name', () => {
    checkOptionKeys({ a: 1, b: undefined }, ['a', 'b']);
    expect(thrown(() => checkOptionKeys({ a: 1, gracems: 2 }, ['a'])).key).toBe('options.gracems');
    expect(thrown(() => checkOptionKeys({ x: 1 }, new Set(['a']), 'options.mounts[0]')).key).toBe('options.mounts[0].x');
  });
  it('rejects what is not a plain object', () => {
    for (const bad of [null, [], 'x', 3, new Map()]) expect(thrown(() => checkOptionKeys(bad, [])).key).toBe('options');
  });
  it('reads own keys only: an inherited name is not an option', () => {
    const bag = Object.assign(Object.create(null) as object, { a: 1 });
    checkOptionKeys(bag, ['a']);
  });
});

describe('nonNegativeOption', () => {
  it('gives the fallback when absent and the value when valid', () => {
    expect(nonNegativeOption('graceMs', undefined, 7)).toBe(7);
    expect(nonNegativeOption('graceMs', undefined)).toBeUndefined();
    expect(nonNegativeOption('graceMs', 0, 7)).toBe(0);
  });
  it('names the option of a bad value', () => {
    for (const bad of [-1, Number.NaN, Infinity, '5', null]) expect(thrown(() => nonNegativeOption('killWaitMs', bad)).key).toBe('options.killWaitMs');
  });
});

describe('capabilitiesOption', () => {
  const available = { streaming: true, stdin: true, 'resource-limits': true, user: true };
  it('turns capabilities off, never on', () => {
    expect(capabilitiesOption({ user: false }, available).user).toBe(false);
    expect(capabilitiesOption({ user: true }, { ...available, user: false }).user).toBe(false);
    expect(capabilitiesOption(undefined, available)).toEqual(available);
  });
  it('rejects an unknown name, an inherited name and a non-boolean', () => {
    expect(thrown(() => capabilitiesOption({ sudo: false }, available)).key).toBe('options.capabilities.sudo');
    expect(thrown(() => capabilitiesOption({ toString: false }, available)).key).toBe('options.capabilities.toString');
    expect(thrown(() => capabilitiesOption({ user: 'no' }, available)).key).toBe('options.capabilities.user');
    expect(thrown(() => capabilitiesOption([], available)).key).toBe('options.capabilities');
  });
});

describe('prlimitArgs', () => {
  it('puts every limit before `--`, the CPU hard limit a second above the soft one', () => {
    expect(prlimitArgs('/usr/bin/prlimit', { cpuSeconds: 2, addressSpaceBytes: 10, fileSizeBytes: 20, openFiles: 30 })).toEqual([
      '/usr/bin/prlimit', '--cpu=2:3', '--as=10', '--fsize=20', '--nofile=30', '--',
    ]);
    expect(prlimitArgs('p', {})).toEqual(['p', '--']);
  });
});
