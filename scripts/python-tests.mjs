#!/usr/bin/env node
// The Python adapter's own suite (python/tests, unittest), as part of `npm test`, then the
// package as a user installs it: python/README.md's "Install" in a fresh virtual environment of
// a temporary directory (offline: `pip install --no-index ./python`), its example run with that
// environment's python from outside the repository (so it imports the installed package, not
// python/), its output checked against the README's, and the installed `sandstream-testee`'s
// hello. It needs python3 3.11 or later, and for the install its venv module (Debian:
// python3-venv): where one is missing it says so and skips, except under CI, where .ci/run
// installs both and a missing one is a failure.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { devNull, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Skips with a reason, or under CI fails with it. */
function missing(what, why, install) {
  if (process.env.CI) {
    process.stderr.write(`${what}: ${why}, which CI must not lack (.ci/run installs ${install})\n`);
    process.exit(1);
  }
  process.stdout.write(`${what}: skipped: ${why} (Debian: apt-get install ${install})\n`);
}

const probe = spawnSync('python3', ['-c', 'import sys; print(sys.version_info >= (3, 11))'], { encoding: 'utf8' });
if (probe.error !== undefined || probe.stdout.trim() !== 'True') {
  const why = probe.error !== undefined ? 'python3 is not installed' : `python3 is older than 3.11 (${(probe.stdout + probe.stderr).trim()})`;
  missing('python tests', why, 'python3');
  process.exit(0);
}
const run = spawnSync('python3', ['-W', 'error', '-m', 'unittest', 'discover', '-s', 'python/tests', '-t', 'python', '-q'], { cwd: root, stdio: 'inherit' });
if (run.status !== 0) process.exit(run.status ?? 1);

const venvProbe = spawnSync('python3', ['-c', 'import venv, ensurepip'], { encoding: 'utf8' });
if (venvProbe.status !== 0) {
  missing('python package install', "python3 has no venv with pip (import venv, ensurepip failed)", 'python3-venv');
  process.exit(0);
}
checkInstall();

/** The README's "Install" and "Example", in a temporary directory that is removed afterwards. */
function checkInstall() {
  const started = Date.now();
  const work = mkdtempSync(join(tmpdir(), 'sandstream-python-'));
  try {
    const home = join(work, 'home');
    const elsewhere = join(work, 'elsewhere');
    mkdirSync(home);
    mkdirSync(elsewhere);
    // Nothing of this machine's Python or pip configuration, nothing written outside `work`.
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(PIP_|PYTHON|VIRTUAL_ENV)/.test(name)));
    Object.assign(env, { HOME: home, PIP_CONFIG_FILE: devNull, PIP_NO_INPUT: '1', PYTHONDONTWRITEBYTECODE: '1' });
    const venv = join(work, 'venv');
    const step = (title, command, args, options) => {
      const result = spawnSync(command, args, { env, encoding: 'utf8', timeout: 120_000, ...options });
      if (result.error !== undefined || result.status !== 0) {
        process.stderr.write(`python package install: ${title} failed (${result.error?.message ?? `status ${result.status}, signal ${result.signal}`})\n${result.stdout ?? ''}${result.stderr ?? ''}`);
        process.exit(1);
      }
      return result.stdout;
    };

    // python/README.md, "Install": the commands as they stand there, the venv in `work`.
    step('python3 -m venv', 'python3', ['-m', 'venv', venv], { cwd: elsewhere });
    step('pip install --no-index ./python', join(venv, 'bin', 'pip'),
      ['install', '--no-index', '--no-cache-dir', '--disable-pip-version-check', '--quiet', './python'], { cwd: root });

    // The installed package, not python/: its files, py.typed, its version against its spec.
    const facts = JSON.parse(step('import sandstream', join(venv, 'bin', 'python'), ['-c', [
      'import json, os, sandstream, sandstream_testee, importlib.metadata as m',
      'print(json.dumps({"file": sandstream.__file__, "testee": sandstream_testee.__file__, "spec": sandstream.SPEC_VERSION,',
      '  "version": m.version("sandstream"), "typed": os.path.isfile(os.path.join(os.path.dirname(sandstream.__file__), "py.typed"))}))',
    ].join('\n')], { cwd: elsewhere }));
    for (const file of [facts.file, facts.testee]) assert.ok(file.startsWith(venv + '/'), `imported from ${file}, not the virtual environment`);
    assert.ok(facts.typed, 'the installed sandstream has no py.typed');
    assert.ok(facts.version.startsWith(`${facts.spec}.`), `version ${facts.version} does not implement spec ${facts.spec}`);

    // python/README.md, "Example": its first python block, run; what it prints, the text block after it.
    const readme = readFileSync(join(root, 'python', 'README.md'), 'utf8');
    const blocks = [...readme.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)];
    const example = blocks.findIndex(([, lang]) => lang === 'python');
    assert.ok(example >= 0 && blocks[example + 1]?.[1] === 'text', 'python/README.md: no python block followed by a text block of its output');
    writeFileSync(join(elsewhere, 'example.py'), blocks[example][2]);
    const printed = step("the README's example", join(venv, 'bin', 'python'), ['-W', 'error', 'example.py'], { cwd: elsewhere });
    // Chunk boundaries are the host's: consecutive chunk lines of one stream compare by their bytes.
    const joined = (text) => text.replace(/(?:^(stdout|stderr) b'(.*)'\n)+/gm, (lines) => {
      const parts = [...lines.matchAll(/^(stdout|stderr) b'(.*)'$/gm)];
      return parts.every(([, stream]) => stream === parts[0][1]) ? `${parts[0][1]} b'${parts.map((p) => p[2]).join('')}'\n` : lines;
    });
    assert.equal(joined(printed), joined(blocks[example + 1][2]), "the README's example printed something else");

    // The console script: the testee's hello, then the end of its input ends it.
    const hello = step('sandstream-testee', join(venv, 'bin', 'sandstream-testee'), [], { cwd: elsewhere, input: '{"id":"1","op":"hello"}\n', timeout: 30_000 });
    const answer = JSON.parse(hello.split('\n')[0]);
    assert.equal(answer.ok, true, `sandstream-testee: ${hello}`);
    assert.equal(answer.value.spec, facts.spec);
    process.stdout.write(`python package install: ${facts.version} into a fresh virtual environment offline; the README's example and sandstream-testee ran from it (${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
  } finally {
    rmSync(work, { recursive: true, force: true });
    assert.ok(!existsSync(work));
  }
}
