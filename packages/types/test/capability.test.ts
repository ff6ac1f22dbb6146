import { describe, expect, it } from 'vitest';
import { CAPABILITIES, CAPABILITY_DEFAULTS, hasCapability, type CapabilityManifest } from '../src/schema/capability.js';
import { validatorFor } from '../src/validators.js';

const ONE_POINT_ZERO: CapabilityManifest = { streaming: true, stdin: false, 'resource-limits': true, user: false };

describe('capabilities of 1.1', () => {
  it('lists binary-output after the four of 1.0, then the four of 1.2, then pty of 1.5; all but the four of 1.0 are optional', () => {
    expect(CAPABILITIES).toEqual(['streaming', 'stdin', 'resource-limits', 'user', 'binary-output', 'attach', 'attach-reconnect', 'replay-full', 'replay-tail', 'pty']);
    expect(CAPABILITY_DEFAULTS).toEqual({ 'binary-output': true });
    const required = ['streaming', 'stdin', 'resource-limits', 'user'];
    const validate = validatorFor('CapabilityManifest');
    for (const capability of CAPABILITIES) {
      const manifest: Record<string, boolean> = { ...ONE_POINT_ZERO, 'binary-output': true };
      delete manifest[capability];
      expect(validate(manifest), capability).toBe(!required.includes(capability));
    }
  });

  it('hasCapability reads a stated value, and the default of an optional one left out', () => {
    expect(hasCapability(ONE_POINT_ZERO, 'binary-output')).toBe(true);
    expect(hasCapability({ ...ONE_POINT_ZERO, 'binary-output': false }, 'binary-output')).toBe(false);
    expect(hasCapability(ONE_POINT_ZERO, 'resource-limits')).toBe(true);
    expect(hasCapability(ONE_POINT_ZERO, 'stdin')).toBe(false);
    expect(hasCapability({} as CapabilityManifest, 'streaming')).toBe(false);
  });
});
