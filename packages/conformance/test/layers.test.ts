/**
 * The engine owns what it shares with the cases (timing.ts, refusals.ts,
 * owner-launcher.ts): outside src/cases, the kit imports the cases only
 * through their registry, so a case's helpers can change without the engine
 * following.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));

/** Every .ts file under `dir`, but src/cases. */
function engineFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return path === join(SRC, 'cases') ? [] : engineFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

describe('the engine and the cases', () => {
  test('outside src/cases, nothing imports from the cases but their registry (cases/index.js)', () => {
    const files = engineFiles(SRC);
    expect(files.map((file) => relative(SRC, file))).toContain('run-case.ts');
    const reaching = files.flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/from '((?:\.\.?\/)+cases\/[^']+)'/g)]
        .map((match) => match[1]!)
        .filter((specifier) => !/(?:^|\/)cases\/index\.js$/.test(specifier))
        .map((specifier) => `${relative(SRC, file)} imports ${specifier}`),
    );
    expect(reaching).toEqual([]);
  });
});
