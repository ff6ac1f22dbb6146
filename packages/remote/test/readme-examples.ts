// The example of README.md, type-checked here (npm run typecheck); test/readme.test.ts checks
// that the README's block is contained in this file, and runs it.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { ReportSplitter, supervisorArgv, type SupervisorReport } from '../src/index.js';

/** The README's example; returns the reports it printed. */
export async function supervisorExample(): Promise<SupervisorReport[]> {
const id = randomUUID();
const [shell, ...args] = supervisorArgv({ id, argv: ['printf', '%s\n', 'a b'] });
// A local process stands in for the backend: a transport gives back the bytes of standard error.
const child = spawn(shell!, args);
const splitter = new ReportSplitter(id);
const reports: SupervisorReport[] = [];
child.stderr.on('data', (chunk: Buffer) => reports.push(...splitter.push(chunk).reports));
await new Promise((resolve) => child.on('close', resolve));
reports.push(...splitter.end().reports);
console.log(reports.map((r) => r.type)); // [ 'start', 'exit', 'gone' ]
  return reports;
}
