import type { CaseResult, ConformanceReport } from '@sandstream/types';
import type { ConformanceCase } from '../case.js';
import type { SchedulePlan } from '../schedule.js';
import { counted } from './words.js';

/** Colours unless NO_COLOR is set (https://no-color.org) or the stream is not a terminal. */
export function useColor(stream: NodeJS.WriteStream | { isTTY?: boolean }): boolean {
  const noColor = process.env['NO_COLOR'];
  if (noColor !== undefined && noColor !== '') return false;
  return stream.isTTY === true;
}

const CODES = { green: 32, red: 31, yellow: 33, gray: 90, bold: 1, cyan: 36 } as const;
type Tint = keyof typeof CODES;

function painter(color: boolean): (tint: Tint, text: string) => string {
  return (tint, text) => (color ? `\u001b[${CODES[tint]}m${text}\u001b[0m` : text);
}

const MARKS: Record<CaseResult['status'], [string, Tint]> = {
  pass: ['✓', 'green'],
  fail: ['✗', 'red'],
  skipped: ['-', 'yellow'],
  disabled: ['○', 'gray'],
  error: ['!', 'red'],
};

/**
 * Live progress. Results are printed as cases end (in completion order when
 * cases run concurrently); on a terminal, a last line names the cases still
 * running and is redrawn as they change.
 */
export function createProgress(out: NodeJS.WritableStream & { isTTY?: boolean }, color: boolean) {
  const paint = painter(color);
  const live = out.isTTY === true;
  const running: string[] = [];
  let drawn = false;
  const drawRunning = (): void => {
    if (!live || running.length === 0) return;
    out.write(paint('gray', `  … ${running.join(', ')}`));
    drawn = true;
  };
  const clearRunning = (): void => {
    if (drawn) out.write('\r\u001b[2K');
    drawn = false;
  };
  return {
    /** How the run lays out its cases, and why (what `auto` measured). */
    schedule(plan: SchedulePlan): void {
      out.write(paint('gray', `  Running ${plan.reason}.\n\n`));
    },
    start(testCase: ConformanceCase): void {
      clearRunning();
      running.push(testCase.id);
      drawRunning();
    },
    end(result: CaseResult): void {
      // Excluded cases are counted in the summary; listing them would bury the rest.
      if (result.status === 'disabled') return;
      clearRunning();
      const at = running.indexOf(result.id);
      if (at >= 0) running.splice(at, 1);
      const [mark, tint] = MARKS[result.status];
      const label = result.status === 'fail' && result.expectedFailure ? 'expected failure' : result.status;
      const time = result.durationMs >= 1 ? paint('gray', ` ${Math.round(result.durationMs)} ms`) : '';
      out.write(`  ${paint(tint, mark)} ${result.id}${time}${result.status === 'pass' ? '' : paint(tint, ` (${label})`)}\n`);
      if (result.message) {
        out.write(`      ${paint(result.status === 'skipped' ? 'gray' : tint, result.message)}\n`);
      }
      drawRunning();
    },
  };
}

/** The `count` cases that took longest, as "id 5.1 s, id 4.3 s". */
export function slowestCases(report: ConformanceReport, count = 3): string {
  return [...report.cases]
    .filter((c) => c.durationMs > 0)
    .sort((a, b) => b.durationMs - a.durationMs)
    .slice(0, count)
    .map((c) => `${c.id} ${(c.durationMs / 1000).toFixed(1)} s`)
    .join(', ');
}

/** The closing summary table. */
export function formatSummary(report: ConformanceReport, color: boolean): string {
  const paint = painter(color);
  const s = report.summary;
  const capabilities = Object.entries(report.adapter.capabilities)
    .map(([name, on]) => (on ? name : paint('gray', `no ${name}`)))
    .join(', ');
  const rows: Array<[string, string]> = [
    ['adapter', `${report.adapter.name} (${capabilities})`],
    ['spec / kit', `${report.specVersion} / ${report.kitVersion}`],
    ['passed', paint('green', String(s.pass))],
    ['failed', s.fail > 0 ? paint('red', `${s.fail}${s.expectedFailures > 0 ? ` (${s.expectedFailures} expected)` : ''}`) : '0'],
    ['skipped', String(s.skipped)],
    ['disabled', String(s.disabled)],
    ['errors', s.error > 0 ? paint('red', String(s.error)) : '0'],
    ['stale expected failures', s.staleExpectedFailures.length > 0 ? paint('red', s.staleExpectedFailures.join(', ')) : '0'],
    ['time', `${(report.durationMs / 1000).toFixed(1)} s`],
  ];
  const slowest = slowestCases(report);
  if (slowest !== '') rows.push(['slowest', slowest]);
  const width = Math.max(...rows.map(([k]) => k.length));
  // Conformance is a claim about every case; a run with cases excluded proves only those it ran.
  const verdict = !report.ok
    ? `${paint('red', paint('bold', 'DOES NOT CONFORM'))} to Sandstream ${report.specVersion}`
    : s.disabled > 0
      ? `${paint('yellow', paint('bold', 'PASSED'))} the ${counted(report.cases.length - s.disabled, 'case')} that ran; with ${s.disabled} disabled, this is not a conformance claim`
      : `${paint('green', paint('bold', 'CONFORMS'))} to Sandstream ${report.specVersion}`;
  return ['', ...rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`), '', `  ${verdict}`, ''].join('\n');
}
