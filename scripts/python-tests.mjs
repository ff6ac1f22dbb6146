#!/usr/bin/env node
// The Python adapter's own suite (python/tests, unittest), as part of `npm test`. It needs
// python3 3.11 or later: where that is missing it says so and skips, except under CI, where
// .ci/run installs python3 and a missing interpreter is a failure.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const probe = spawnSync('python3', ['-c', 'import sys; print(sys.version_info >= (3, 11))'], { encoding: 'utf8' });
if (probe.error !== undefined || probe.stdout.trim() !== 'True') {
  const why = probe.error !== undefined ? 'python3 is not installed' : `python3 is older than 3.11 (${(probe.stdout + probe.stderr).trim()})`;
  if (process.env.CI) {
    process.stderr.write(`python tests: ${why}, and CI must run them (.ci/run installs python3)\n`);
    process.exit(1);
  }
  process.stdout.write(`python tests: skipped: ${why} (Debian: apt-get install python3)\n`);
  process.exit(0);
}
const run = spawnSync('python3', ['-W', 'error', '-m', 'unittest', 'discover', '-s', 'python/tests', '-t', 'python', '-q'], { cwd: root, stdio: 'inherit' });
process.exit(run.status ?? 1);
