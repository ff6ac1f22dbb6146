#!/usr/bin/env node
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { ConformanceReport } from '@sandstream/types';
import type { RunWarning } from './warnings.js';
import { CASES, isBlocking, runConformance } from './engine.js';
import { currentCase, describeFault, FAULT_ADVICE, type Fault } from './faults.js';
import { loadAdapter, UsageError } from './adapter-module.js';
import { describeOpenHandles, openHandles } from './open-handles.js';
import { runsAlone } from './schedule.js';
import { formatJson } from './reporters/json.js';
import { formatJunit } from './reporters/junit.js';
import { createProgress, formatSummary, useColor } from './reporters/pretty.js';
import { formatTap } from './reporters/tap.js';
import { KIT_SPEC_VERSION, KIT_VERSION } from './version.js';

const USAGE = `Usage: sandstream-conformance <adapter-module> [options]
       sandstream-conformance --testee "<command line>" [options]

Runs the Sandstream ${KIT_SPEC_VERSION} conformance kit against the adapter whose
module's default export is a factory returning a fresh Sandbox, or against an adapter
in any language served by a testee: a program that speaks the testee protocol on its
standard input and output (spec section 18; \`sandstream-testee <module>\` serves a
JavaScript module that way). The kit ends the testee's process group when it is done.

The module may also export \`conformanceHooks\` (setup, teardown, attach): see the README.
A TypeScript module must be built to JavaScript first, or run with a TypeScript loader
(NODE_OPTIONS='--import tsx'): see the README.

Options:
  --reporter <name>            pretty (default), json, junit or tap
  --out <file>                 write the report there instead of standard output
  --include <ids>              run only these: comma-separated case ids, prefixes ("teardown.*")
                               or requirement ids; repeated, the selections add up
                               (--include 'background.*' --include 'attach.*' runs both)
  --exclude <ids>              the same, reported as disabled; repeated, every exclusion applies
  --expected-failures <file>   case ids the adapter is known to fail (JSON array, or one per line)
  --case-timeout <ms>          per-case time limit (default 20000)
  --concurrency <n|auto>       independent cases run at once; auto (default): 1 on a backend
                               answering within 30 ms, else as many as the idle CPU carries
                               (at most 4). Some cases always run alone
  --grace-ms <ms>              only for a sandbox that states no \`termination\` (a 1.0 adapter):
                               its grace period (default: the spec's 2000)
  --list                       list the cases and exit
  --version                    print the kit and spec versions
  -h, --help                   this text

Exit status: 0 conforms, 1 a required case failed or an expected failure is stale,
2 the harness failed (bad arguments, adapter not loadable, harness error), or the adapter
raised an error nobody could catch outside every case or after the report.`;


/** Flags that were renamed: using one is a usage error naming its replacement. */
const RENAMED_FLAGS: Readonly<Record<string, string>> = { only: '--include' };

/**
 * The case selectors of every use of a flag, each a comma-separated list: a
 * repeated flag adds to the ones before it instead of replacing them. An
 * empty one is an error, not "every case".
 */
function parseSelectors(values: readonly string[] | undefined, flag: string): string[] {
  const all: string[] = [];
  for (const value of values ?? []) {
    const items = value.split(',').map((s) => s.trim()).filter((s) => s !== '');
    // An empty --include would otherwise mean "no filter": the whole kit.
    if (items.length === 0) throw new UsageError(`${flag} needs at least one case id, prefix or requirement id`);
    all.push(...items.filter((item) => !all.includes(item)));
  }
  return all;
}

/** A non-negative number of milliseconds, or undefined when the flag is absent. */
function parseMilliseconds(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new UsageError(`${flag} must be a non-negative number, got ${JSON.stringify(value)}`);
  return n;
}

/** A positive integer (or `auto`), or undefined when the flag is absent. */
function parseConcurrency(value: string | undefined, flag: string): number | 'auto' | undefined {
  if (value === undefined || value === 'auto') return value;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag} must be a positive integer or auto, got ${JSON.stringify(value)}`);
  return n;
}

function readExpectedFailures(path: string | undefined): string[] {
  if (path === undefined) return [];
  const text = readFileSync(path, 'utf8');
  if (text.trimStart().startsWith('[')) {
    const parsed = JSON.parse(text) as unknown;
    if (!Array.isArray(parsed) || !parsed.every((x) => typeof x === 'string')) {
      throw new UsageError(`${path} must be a JSON array of case ids`);
    }
    return parsed;
  }
  return text
    .split('\n')
    .map((line) => line.replace(/#.*/, '').trim())
    .filter((line) => line !== '');
}

function render(report: ConformanceReport, reporter: string, color: boolean): string {
  switch (reporter) {
    case 'json':
      return formatJson(report);
    case 'junit':
      return formatJunit(report);
    case 'tap':
      return formatTap(report);
    default:
      return formatSummary(report, color);
  }
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      reporter: { type: 'string', default: 'pretty' },
      testee: { type: 'string' },
      out: { type: 'string' },
      // Repeatable: each use adds its selectors to the others'.
      include: { type: 'string', multiple: true },
      only: { type: 'string' },
      exclude: { type: 'string', multiple: true },
      'expected-failures': { type: 'string' },
      'case-timeout': { type: 'string' },
      'grace-ms': { type: 'string' },
      concurrency: { type: 'string' },
      list: { type: 'boolean', default: false },
      version: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (values.version) {
    process.stdout.write(`sandstream-conformance ${KIT_VERSION} (spec ${KIT_SPEC_VERSION})\n`);
    return 0;
  }
  if (values.list) {
    process.stdout.write(
      '# Every case runs POSIX sh and coreutils inside the sandbox (and awk, sed, grep, /proc where\n' +
        '# available): see "What the sandbox must have" in the package README.\n',
    );
    for (const c of CASES) {
      const gate = c.needs?.length ? `needs ${c.needs.join(', ')}` : c.without ? `without ${c.without}` : '';
      const alone = runsAlone(c) === undefined ? '' : 'runs alone';
      const notes = [gate, alone].filter((n) => n !== '').join('; ');
      process.stdout.write(`${c.id.padEnd(36)} ${c.requirements.join(',').padEnd(24)} ${c.title}${notes ? ` (${notes})` : ''}\n`);
    }
    return 0;
  }
  for (const [flag, replacement] of Object.entries(RENAMED_FLAGS)) {
    if ((values as Record<string, unknown>)[flag] !== undefined) throw new UsageError(`--${flag} was renamed ${replacement}`);
  }
  const reporter = values.reporter;
  if (!['pretty', 'json', 'junit', 'tap'].includes(reporter)) throw new UsageError(`unknown reporter ${JSON.stringify(reporter)}`);
  if (values.testee !== undefined) {
    if (positionals.length !== 0) throw new UsageError('--testee takes the place of the adapter module: give one or the other');
    if (values.testee.trim() === '') throw new UsageError('--testee needs a command line');
  } else if (positionals.length !== 1) {
    throw new UsageError('expected exactly one adapter module (or --testee "<command line>")');
  }

  // Warnings an adapter emits (a garbage-collected Process, say) would cut
  // through the live progress; they are collected, each with the cases it is
  // attributed to, and the unexpected ones listed at the end. Those a case
  // provokes on purpose are no problem, and not shown.
  const warnings: string[] = [];
  const collect = ({ warning, cases, expected }: RunWarning): void => {
    if (expected) return;
    const where = cases.length === 0 ? 'outside every case' : cases.join(', ');
    warnings.push(`${warning.name}${warning.code ? ` [${warning.code}]` : ''} (${where}): ${warning.message}`);
  };
  process.removeAllListeners('warning');
  process.on('warning', (warning: Error & { code?: string }) => collect({ warning, cases: [], expected: false }));

  const adapter = values.testee === undefined ? await loadAdapter(positionals[0]!) : { testee: { command: values.testee } };
  const subject = values.testee === undefined ? positionals[0]! : `the testee ${JSON.stringify(values.testee)}`;
  const color = values.out === undefined && useColor(process.stdout);
  const progress = reporter === 'pretty' ? createProgress(process.stdout, color) : undefined;
  if (progress) process.stdout.write(`Sandstream ${KIT_SPEC_VERSION} conformance (kit ${KIT_VERSION}) against ${subject}\n\n`);

  const caseTimeoutMs = parseMilliseconds(values['case-timeout'], '--case-timeout');
  const graceMs = parseMilliseconds(values['grace-ms'], '--grace-ms');
  const concurrency = parseConcurrency(values.concurrency, '--concurrency');
  let report: ConformanceReport;
  let hookProblem: string | undefined;
  try {
    report = await runConformance({
      ...adapter,
      include: parseSelectors(values.include, '--include'),
      exclude: parseSelectors(values.exclude, '--exclude'),
      expectedFailures: readExpectedFailures(values['expected-failures']),
      ...(caseTimeoutMs === undefined ? {} : { caseTimeoutMs }),
      ...(graceMs === undefined ? {} : { graceMs }),
      ...(concurrency === undefined ? {} : { concurrency }),
      ...(progress ? { onSchedule: progress.schedule, onCaseStart: progress.start, onCaseEnd: progress.end } : {}),
      onWarning: collect,
    });
  } catch (error) {
    // A teardown hook that failed still leaves a report to show.
    const partial = (error as { report?: ConformanceReport }).report;
    if (partial === undefined) throw error;
    report = partial;
    hookProblem = (error as Error).message;
  }

  const output = render(report, reporter, color);
  if (values.out !== undefined) {
    writeFileSync(values.out, output);
    const out = values.out;
    written = { report, rewrite: (amended) => writeFileSync(out, render(amended, reporter, false)) };
  }
  else process.stdout.write(output);
  if (warnings.length > 0) {
    const lines = [`  Unexpected warnings emitted during the run (${warnings.length}):`, ...warnings.map((w) => `    ${w}`), ''].join('\n');
    // Machine-readable output on stdout stays parseable.
    (reporter === 'pretty' && values.out === undefined ? process.stdout : process.stderr).write(`${lines}\n`);
  }
  if (hookProblem !== undefined) {
    process.stderr.write(`sandstream-conformance: ${hookProblem}\n`);
    return 2;
  }
  if (report.summary.error > 0) return 2;
  return report.ok ? 0 : 1;
}

/**
 * Ends the process with `code` once the report is out. When nothing else is
 * left, Node ends by itself; when the adapter left something open (a leaked
 * command, a connection), the CLI names it and exits anyway, so a CI job
 * never hangs on a finished run.
 */
function exitWhenDone(code: number, baseline: readonly string[]): void {
  process.exitCode = code;
  // Unreferenced: it fires only if something else keeps the process alive.
  setTimeout(() => {
    const open = describeOpenHandles(openHandles(baseline));
    process.stderr.write(`sandstream-conformance: the adapter left ${open} open after the run; exiting with ${code} anyway\n`);
    process.exit(code);
  }, 250).unref();
}

/** The report once written to --out, and how to write it again. */
let written: { report: ConformanceReport; rewrite(amended: ConformanceReport): void } | undefined;

// A reader that goes away (`sandstream-conformance --list | head`) ends the output, not the run with a stack trace.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw error;
});

/**
 * Outside runConformance (which holds these events while it runs), what the
 * adapter raises where no caller can catch it, such as a late error after the
 * report was written, ends the CLI as a harness error naming the case whose
 * work raised it, instead of Node's bare stack and exit 1.
 */
function onFault(fault: Fault): void {
  const origin = currentCase();
  const where = origin === undefined ? 'outside every case' : `in the work of the case ${origin.label}, after the case ended`;
  const problem = `the adapter raised an ${describeFault(fault)} ${where}, where no caller could catch it; ${FAULT_ADVICE}`;
  // A report already written to a file is written again with the case failed, so that it names it too.
  const entry = written?.report.cases.find((c) => c.id === origin?.label);
  if (written !== undefined && entry !== undefined) written.rewrite(amendedReport(written.report, entry.id, `after the report was written, ${problem}`));
  process.stderr.write(`sandstream-conformance: ${written === undefined ? '' : 'after the report, '}${problem}\n`);
  process.exit(2);
}

/** The report with case `id` failed for `message`, its summary and verdict to match. */
function amendedReport(report: ConformanceReport, id: string, message: string): ConformanceReport {
  const summary = { ...report.summary };
  let ok = report.ok;
  const cases = report.cases.map((c) => {
    if (c.id !== id) return c;
    const amended = { ...c, message: c.message === undefined ? message : `${c.message}; then, ${message}` };
    // A case that failed or errored already keeps its status (and whether that was expected).
    if (c.status === 'fail' || c.status === 'error') return amended;
    summary[c.status] -= 1;
    summary.fail += 1;
    const failed = { ...amended, status: 'fail' as const, expectedFailure: false };
    const blocking = isBlocking(failed, c);
    ok = ok && !blocking;
    return { ...failed, blocking };
  });
  return { ...report, summary, cases, ok };
}
process.on('uncaughtException', (error) => onFault({ kind: 'uncaught exception', error }));
process.on('unhandledRejection', (error) => onFault({ kind: 'unhandled rejection', error }));

const baseline = process.getActiveResourcesInfo();
main(process.argv.slice(2)).then(
  (code) => exitWhenDone(code, baseline),
  (error: unknown) => {
    const usage = error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    process.stderr.write(`sandstream-conformance: ${error instanceof Error ? error.message : String(error)}\n`);
    if (usage) process.stderr.write('Run with --help for usage.\n');
    exitWhenDone(2, baseline);
  },
);
