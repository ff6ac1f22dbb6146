/**
 * A sandbox that lacks what the cases run inside it is a harness error
 * (exit 2) naming what is missing, never a list of failures.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, test } from 'vitest';
import type { ConformanceReport } from '@sandstream/types';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'sandstream-harness-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The CLI with `PATH` set for the kit and, through the local adapter's inherited environment, for the sandbox. */
function cliWithPath(path: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { ...process.env, PATH: path }, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

describe('a sandbox without the tools the kit needs', () => {
  test('with no sh at all (PATH=/nonexistent) the run exits 2 and says sh cannot start', async () => {
    const out = await cliWithPath('/nonexistent', [fixture('local-fast.mjs'), '--include', 'stream.synchronous,teardown.close', '--reporter', 'json']);
    expect(out.code).toBe(2);
    const report = JSON.parse(out.stdout) as ConformanceReport;
    const ran = report.cases.filter((c) => c.status !== 'disabled');
    expect(ran.map((c) => c.status)).toEqual(['error', 'error']);
    expect(report.summary.fail).toBe(0);
    expect(ran[0]!.message).toMatch(/cannot start `sh`.*ENOENT/);
  });

  test('with sh but without the other tools, the run exits 2 and names each missing tool', async () => {
    const bin = join(scratch, 'bin');
    mkdirSync(bin);
    symlinkSync('/bin/sh', join(bin, 'sh'));
    symlinkSync('/bin/sleep', join(bin, 'sleep'));
    const out = await cliWithPath(bin, [fixture('local-fast.mjs'), '--include', 'stream.synchronous', '--reporter', 'json']);
    expect(out.code).toBe(2);
    const entry = (JSON.parse(out.stdout) as ConformanceReport).cases.find((c) => c.id === 'stream.synchronous')!;
    expect(entry.status).toBe('error');
    expect(entry.message).toMatch(/lacks tools the cases run inside it: .*\bmktemp\b/);
    for (const tool of ['sed', 'grep', 'tr', 'awk', 'cat']) expect(entry.message).toContain(tool);
    expect(entry.message).not.toMatch(/\bsleep\b,/);
    expect(entry.message).toContain(`PATH=${bin}`);
  });
});
