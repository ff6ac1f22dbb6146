/**
 * The raw e2b wrapper's one command string must carry argv exactly through
 * a shell, so that what fails on the page is the SDK's, not this quoting.
 */
import { spawnSync } from 'node:child_process';
import { expect, it } from 'vitest';
import { shellLine } from '../src/shell-line.js';

it('round-trips hostile arguments through bash -c as separate, exact arguments', () => {
  const args = ['', ' ', "'", "it's", '"$HOME"', '$(touch pwned)', '`id`', 'a\nb', '\\', '*', ';|&<>', '!x', '\t', 'é漢😀'];
  const result = spawnSync('/bin/bash', ['-c', shellLine(['printf', '%s\\0', ...args])], { encoding: 'utf8' });
  expect(result.status).toBe(0);
  expect(result.stdout.split('\0').slice(0, -1)).toEqual(args);
});
