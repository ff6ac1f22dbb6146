import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, test } from 'vitest';
import { SPEC_VERSION, validatorFor, type ConformanceReport } from '@sandstream/types';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'sandstream-cli-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(args: string[], env: NodeJS.ProcessEnv = {}, cwd?: string): Promise<Outcome> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, timeout: 60_000, ...(cwd ? { cwd } : {}) }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      resolve({ code, stdout, stderr });
    });
  });
}

// Quick cases that need no long teardown; enough to exercise the CLI.
const QUICK = 'stream.*,result.*,bytes.final-line';

describe('sandstream-conformance CLI', () => {
  test('exits 0 and prints a summary with the run time when the adapter conforms', async () => {
    const out = await cli([fixture('local-fast.mjs'), '--include', QUICK], { NO_COLOR: '1' });
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/✓ stream\.synchronous/);
    expect(out.stdout).toMatch(/time\s+\d+\.\d s/);
    // Cases were excluded, so the verdict is not a conformance claim.
    expect(out.stdout).toMatch(/PASSED the \d+ cases that ran; with \d+ disabled, this is not a conformance claim/);
    const one = await cli([fixture('local-fast.mjs'), '--include', 'stream.synchronous'], { NO_COLOR: '1' });
    expect(one.stdout).toMatch(/PASSED the 1 case that ran; with \d+ disabled/);
    expect(out.stdout).not.toMatch(/CONFORMS/);
    expect(out.stdout).not.toMatch(/\u001b\[/);
  });

  test('prints no warning for the leak teardown.garbage-collected provokes on purpose, and hides disabled cases', async () => {
    const out = await cli([fixture('local-fast.mjs'), '--include', 'teardown.garbage-collected'], { NO_COLOR: '1' });
    expect(out.code).toBe(0);
    expect(out.stderr).toBe('');
    expect(out.stdout).toMatch(/✓ teardown\.garbage-collected/);
    expect(out.stdout).not.toMatch(/^\(node:\d+\)/m);
    expect(out.stdout).not.toMatch(/SANDSTREAM_PROCESS_LEAKED|[Ww]arning/);
    expect(out.stdout).not.toMatch(/disabled\)/);
    expect(out.stdout).toMatch(/disabled\s+\d+/);
  });

  test('lists an unexpected warning after the summary, naming the case that provoked it', async () => {
    const out = await cli([fixture('warns.mjs'), '--include', 'stream.synchronous'], { NO_COLOR: '1' });
    expect(out.code).toBe(0);
    expect(out.stdout).not.toMatch(/^\(node:\d+\)/m);
    expect(out.stdout).toMatch(/PASSED[\s\S]*Unexpected warnings emitted during the run \(1\):\n\s+Warning \[X_ADAPTER_WARNING\] \(stream\.synchronous\): the adapter's own warning/);
    const json = await cli([fixture('warns.mjs'), '--include', 'stream.synchronous', '--reporter', 'json']);
    // Machine-readable output stays parseable; the warning goes to stderr.
    expect((JSON.parse(json.stdout) as ConformanceReport).ok).toBe(true);
    expect(json.stderr).toMatch(/Warning \[X_ADAPTER_WARNING\] \(stream\.synchronous\)/);
  });

  test('exits 1 and names the failing case when a required case fails', async () => {
    const out = await cli([fixture('streamed-lies.mjs'), '--include', 'result.streamed-flag'], { NO_COLOR: '1' });
    expect(out.code).toBe(1);
    expect(out.stdout).toMatch(/✗ result\.streamed-flag/);
    expect(out.stdout).toMatch(/a run\(\) result has streamed: true/);
    expect(out.stdout).toMatch(/DOES NOT CONFORM/);
  });

  test('an expected failure keeps exit 0; a stale one exits 1', async () => {
    const list = join(scratch, 'expected.txt');
    writeFileSync(list, '# known defects\nresult.streamed-flag\n');
    const expected = await cli([fixture('streamed-lies.mjs'), '--include', 'result.streamed-flag', '--expected-failures', list]);
    expect(expected.code).toBe(0);
    expect(expected.stdout).toMatch(/expected failure/);
    const stale = await cli([fixture('local-fast.mjs'), '--include', 'result.streamed-flag', '--expected-failures', list]);
    expect(stale.code).toBe(1);
    expect(stale.stdout).toMatch(/stale expected failures\s+result\.streamed-flag/);
  });

  test('exits 2 on a harness error: no default export, a throwing factory, bad flags', async () => {
    const noDefault = await cli([fixture('no-default.mjs')]);
    expect(noDefault.code).toBe(2);
    expect(noDefault.stderr).toMatch(/no default export/);
    const throwing = await cli([fixture('factory-throws.mjs'), '--include', 'stream.synchronous', '--reporter', 'json']);
    expect(throwing.code).toBe(2);
    expect((JSON.parse(throwing.stdout) as ConformanceReport).cases.find((c) => c.id === 'stream.synchronous')?.status).toBe('error');
    expect((await cli([fixture('local-fast.mjs'), '--reporter', 'xml'])).code).toBe(2);
    expect((await cli([fixture('local-fast.mjs'), '--bogus'])).code).toBe(2);
    const typo = await cli([fixture('local-fast.mjs'), '--include', 'teardwn.*']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/matches no case/);
  });

  test('--reporter json writes a report valid against the spec schema, with disabled cases', async () => {
    const file = join(scratch, 'report.json');
    const out = await cli([fixture('local-fast.mjs'), '--include', QUICK, '--exclude', 'stream.single-iteration', '--reporter', 'json', '--out', file]);
    expect(out.code).toBe(0);
    const report = JSON.parse(readFileSync(file, 'utf8')) as ConformanceReport;
    const validate = validatorFor('ConformanceReport');
    expect(validate(report), JSON.stringify(validate.issues)).toBe(true);
    expect(report.adapter.name).toBe('local');
    expect(report.specVersion).toBe(SPEC_VERSION);
    expect(report.cases.find((c) => c.id === 'stream.single-iteration')?.status).toBe('disabled');
    expect(report.cases.find((c) => c.id === 'stream.synchronous')?.status).toBe('pass');
    expect(report.cases.find((c) => c.id === 'teardown.break')?.status).toBe('disabled');
  });

  test('a repeated --include adds its cases to the others, a repeated --exclude applies every exclusion, and a comma list still works', async () => {
    const statuses = async (args: string[]): Promise<Map<string, string>> => {
      const out = await cli([fixture('local-fast.mjs'), ...args, '--reporter', 'json']);
      expect(out.code, out.stderr).toBe(0);
      return new Map((JSON.parse(out.stdout) as ConformanceReport).cases.map((c) => [c.id, c.status]));
    };
    const ran = (map: Map<string, string>): string[] => [...map].filter(([, status]) => status !== 'disabled').map(([id]) => id).sort();
    // Two uses of --include: the union of both selections, not only the last one.
    const twice = await statuses(['--include', 'stream.synchronous', '--include', 'result.*']);
    const results = ran(twice).filter((id) => id.startsWith('result.'));
    expect(results.length).toBeGreaterThan(1);
    expect(ran(twice)).toEqual(['stream.synchronous', ...results].sort());
    // The same selection as one comma-separated list.
    expect(ran(await statuses(['--include', 'stream.synchronous,result.*']))).toEqual(ran(twice));
    // Two uses of --exclude: both cases are disabled, and the rest of the selection runs.
    const excluded = await statuses(['--include', 'stream.*', '--exclude', 'stream.synchronous', '--exclude', 'stream.single-iteration']);
    expect(excluded.get('stream.synchronous')).toBe('disabled');
    expect(excluded.get('stream.single-iteration')).toBe('disabled');
    expect(ran(excluded).length).toBeGreaterThan(0);
    expect(ran(excluded).every((id) => id.startsWith('stream.'))).toBe(true);
    // An empty use among others is still a usage error.
    const empty = await cli([fixture('local-fast.mjs'), '--include', 'stream.synchronous', '--include', ',']);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/--include needs at least one/);
  });

  test('--reporter junit writes one testcase per case with failures marked', async () => {
    const out = await cli([fixture('streamed-lies.mjs'), '--include', 'result.streamed-flag,stream.synchronous', '--reporter', 'junit']);
    expect(out.code).toBe(1);
    expect(out.stdout.startsWith('<?xml version="1.0" encoding="UTF-8"?>')).toBe(true);
    expect(out.stdout.match(/<testcase /g)?.length).toBeGreaterThan(40);
    expect(out.stdout).toMatch(/<testcase classname="10 ExecResult and exit status" name="result\.streamed-flag[^"]*"[^>]*>\s*<failure message="a run\(\) result has streamed: true"/);
    expect(out.stdout).toMatch(/failures="1"/);
  });

  test('--reporter tap writes TAP 14 with a plan and a closing count', async () => {
    const out = await cli([fixture('local-fast.mjs'), '--include', 'stream.synchronous', '--reporter', 'tap']);
    expect(out.code).toBe(0);
    const lines = out.stdout.split('\n');
    expect(lines[0]).toBe('TAP version 14');
    expect(lines[1]).toMatch(/^1\.\.\d+$/);
    expect(out.stdout).toMatch(/^ok \d+ stream\.synchronous - /m);
    expect(out.stdout).toMatch(/^ok \d+ teardown\.break - .* # SKIP disabled/m);
  });

  test('--list prints every case with its requirements; --version prints both versions', async () => {
    const list = await cli(['--list']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^teardown\.break\s+SS-TEAR-2/m);
    expect(list.stdout).toMatch(/stdin\.echo-and-eof .*needs stdin/);
    expect(list.stdout).toMatch(/^limits\.cpu .*runs alone/m);
    expect(list.stdout).not.toMatch(/^stream\.synchronous .*runs alone/m);
    const version = await cli(['--version']);
    expect(version.stdout).toMatch(new RegExp(`^sandstream-conformance \\d+\\.\\d+\\.\\d+ \\(spec ${SPEC_VERSION.replace('.', '\\.')}\\)$`, 'm'));
  });

  test('loads an adapter by package name from the current directory, import-only exports and an exported subpath included', async () => {
    const project = join(scratch, 'project');
    const pkg = join(project, 'node_modules', 'import-only-adapter');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'import-only-adapter', type: 'module', exports: { '.': { import: './adapter.js' } } }));
    writeFileSync(join(pkg, 'adapter.js'), `export { default } from ${JSON.stringify(pathToFileURL(fixture('local-fast.mjs')).href)};\n`);
    const out = await cli(['import-only-adapter', '--include', 'stream.synchronous', '--reporter', 'tap'], {}, project);
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/^ok \d+ stream\.synchronous/m);
    // A subpath through the package's exports, as the remote adapters' kit faces are published.
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'import-only-adapter', type: 'module', exports: { '.': './none.js', './conformance': { types: './x.d.ts', default: './adapter.js' } } }));
    const subpath = await cli(['import-only-adapter/conformance', '--include', 'stream.synchronous', '--reporter', 'tap'], {}, project);
    expect(subpath.stderr).toBe('');
    expect(subpath.stdout).toMatch(/^ok \d+ stream\.synchronous/m);
    const missing = await cli(['no-such-adapter-package'], {}, project);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/cannot find "no-such-adapter-package"/);
    // A subpath the package does not export is refused as an import of it would be (Node's own resolution).
    const hidden = await cli(['import-only-adapter/adapter.js'], {}, project);
    expect(hidden.code).toBe(2);
    expect(hidden.stderr).toMatch(/cannot load "import-only-adapter\/adapter\.js" from .*: Package subpath '\.\/adapter\.js' is not defined by "exports" in \S+package\.json\n/);
  });

  test('an empty --include is a usage error, not the whole kit; the old --only fails naming its new name', async () => {
    const out = await cli([fixture('local-fast.mjs'), '--include', ',']);
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(/--include needs at least one/);
    const old = await cli([fixture('local-fast.mjs'), '--only', 'stream.synchronous']);
    expect(old.code).toBe(2);
    expect(old.stderr).toMatch(/--only was renamed --include/);
  });

  test('an adapter that raises an error nobody can catch (a naive child_process Sandbox\'s stdin EPIPE): the case fails naming it, the run goes on, exit 1', async () => {
    const out = await cli([fixture('naive-child-process.mjs'), '--include', 'stdin.*'], { NO_COLOR: '1' });
    expect(out.stderr).toBe('');
    expect(out.code).toBe(1);
    expect(out.stdout).toMatch(/✗ stdin\.stopped-reading .*\n\s+the adapter raised an uncaught exception: Error \[EPIPE\]: write EPIPE .*where no caller could catch it/);
    // The cases after it ran too, and the summary is there.
    expect(out.stdout).toMatch(/✓ stdin\.large-input/);
    expect(out.stdout).toMatch(/DOES NOT CONFORM/);
    for (const reporter of ['json', 'junit', 'tap']) {
      const file = join(scratch, `naive.${reporter}`);
      const written = await cli([fixture('naive-child-process.mjs'), '--include', 'stdin.stopped-reading', '--reporter', reporter, '--out', file]);
      expect(written.code, reporter).toBe(1);
      const text = readFileSync(file, 'utf8');
      expect(text, reporter).toMatch(/stdin\.stopped-reading[\s\S]*uncaught exception: Error \[EPIPE\]: write EPIPE/);
    }
    const report = JSON.parse(readFileSync(join(scratch, 'naive.json'), 'utf8')) as ConformanceReport;
    expect(validatorFor('ConformanceReport')(report)).toBe(true);
    expect(report.cases.find((c) => c.id === 'stdin.stopped-reading')?.status).toBe('fail');
  });

  test('an error the adapter raises after the report: exit 2 naming the case, and the --out report written again with the case failed', async () => {
    const file = join(scratch, 'late.json');
    const out = await cli([fixture('late-fault.mjs'), '--include', 'stream.synchronous', '--reporter', 'json', '--out', file]);
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(/^sandstream-conformance: after the report, the adapter raised an uncaught exception: Error: a disposed Process's callback ran after the run .* in the work of the case stream\.synchronous, after the case ended/);
    const report = JSON.parse(readFileSync(file, 'utf8')) as ConformanceReport;
    expect(validatorFor('ConformanceReport')(report)).toBe(true);
    expect(report.ok).toBe(false);
    expect(report.summary.fail).toBe(1);
    const entry = report.cases.find((c) => c.id === 'stream.synchronous');
    expect(entry?.status).toBe('fail');
    expect(entry?.message).toMatch(/^after the report was written, the adapter raised an uncaught exception: Error: a disposed Process's callback ran after the run/);
  });

  test('a TypeScript adapter module this Node.js cannot import: exit 2, saying how to run one', async () => {
    const out = await cli([fixture('typescript-adapter.ts')]);
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(/cannot load .*typescript-adapter\.ts: Node\.js \d+\.\d+\.\d+ cannot import TypeScript by itself\. Build the adapter to JavaScript \(tsc\) and pass the \.js file; or run the kit with a TypeScript loader: .*NODE_OPTIONS='--import tsx' npx sandstream-conformance/);
    expect(out.stderr).not.toMatch(/Unknown file extension|--help/);
  });
});
