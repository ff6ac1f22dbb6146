/**
 * A correct text-only adapter (`binary-output: false`, output decoded by a
 * streaming WHATWG decoder): the kit checks it rather than excusing it. The
 * text case passes, the byte-exact cases are skipped with the reason, and the
 * standard-input echo cases still pass, with valid UTF-8 as the echoed data, as
 * do the large environment and argv checks, whose strings are valid UTF-8.
 */
import { describe, test } from 'vitest';
import { runConformance } from '../src/index.js';
import { Lab, textOnlyLocal } from './broken/index.js';
import { textOnlyBackground } from './broken/background.js';

describe('a correct text-only adapter', () => {
  test('passes the text case and the stdin echo cases, and skips the byte-exact ones', { timeout: 120_000 }, async ({ expect }) => {
    const lab = new Lab('text-only');
    try {
      const passing = ['capabilities.absent-binary-output', 'stdin.large-input', 'stdin.run-input', 'stdin.echo-and-eof', 'environment.env', 'arguments.argv-byte-exact'];
      const include = [...passing, 'bytes.all-values', 'bytes.utf8-split'];
      const report = await runConformance({ factory: () => textOnlyLocal(lab), include, concurrency: 1 });
      const byId = new Map(report.cases.map((c) => [c.id, c]));
      for (const id of passing) {
        expect(byId.get(id)?.status, `${id}: ${byId.get(id)?.message ?? ''}`).toBe('pass');
      }
      for (const id of ['bytes.all-values', 'bytes.utf8-split']) {
        expect(byId.get(id)?.status).toBe('skipped');
        expect(byId.get(id)?.message).toMatch(/binary-output/);
      }
    } finally {
      expect(await lab.cleanup(), 'processes left running').toEqual([]);
    }
  });

  test('passes every background and attach case, their payloads text', { timeout: 120_000 }, async ({ expect }) => {
    const lab = new Lab('text-only-attach');
    try {
      const report = await runConformance({ factory: () => textOnlyBackground(lab), include: ['background.*', 'attach.*'], concurrency: 1 });
      const ran = report.cases.filter((c) => c.status !== 'disabled' && c.status !== 'skipped');
      expect(ran.map((c) => `${c.id}: ${c.status} ${c.message ?? ''}`)).toEqual(ran.map((c) => `${c.id}: pass `));
      expect(ran.length).toBeGreaterThanOrEqual(9);
    } finally {
      expect(await lab.cleanup(), 'processes left running').toEqual([]);
    }
  });
});
