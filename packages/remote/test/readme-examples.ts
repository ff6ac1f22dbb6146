// The example of README.md, type-checked here (npm run typecheck); test/readme.test.ts checks
// that the README's block is contained in this file, and runs it.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { defineRemoteSandbox, ReportSplitter, supervisorArgv, type RemoteTransport, type SupervisorReport } from '../src/index.js';

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

/** The README's second example: a backend built on the driver; returns the result of its run. */
export async function transportExample(): Promise<{ stdoutText: string; exitCode: number | null; requests: number }> {
let requests = 0;
// A transport over local processes, standing in for a backend's API.
const transport: RemoteTransport = {
  signals: new Set(['SIGTERM']),
  start(request, sink) {
    requests += 1;
    const [file, ...words] = request.argv;
    const child = spawn(file!, words, { env: { ...process.env, ...request.env }, cwd: request.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdout.on('data', (chunk: Buffer) => sink.output('stdout', chunk));
    child.stderr.on('data', (chunk: Buffer) => sink.output('stderr', chunk));
    child.on('error', (error) => sink.end({ kind: 'refused', reason: error.message, error }));
    child.on('close', (exitCode, signal) => sink.end({ kind: 'exit', status: { exitCode, signal } }));
    return {
      async signal(name) {
        child.kill(name as NodeJS.Signals);
      },
      async writeStdin(data) {
        child.stdin.write(data);
      },
      async closeStdin() {
        child.stdin.end();
      },
      close() {
        child.stdout.destroy();
        child.stderr.destroy();
      },
    };
  },
  run(argv) {
    requests += 1;
    return new Promise((resolve) => spawn(argv[0]!, argv.slice(1), { stdio: 'ignore' }).on('close', (exitCode) => resolve({ exitCode })));
  },
};
// The supervisor, the owner lease, the option vocabulary and the close-time sweep, over it.
const sandbox = defineRemoteSandbox({
  name: 'local-processes',
  capabilities: { streaming: true, stdin: true, 'resource-limits': true, user: false },
  native: undefined,
  options: { graceMs: 1_000 },
  transport: () => transport,
});
const result = await sandbox.run(['sh', '-c', 'echo hello; exit 3']);
const requestsOfRun = requests;
console.log(result.stdoutText, result.exitCode, requestsOfRun); // "hello\n" 3 1
await sandbox.close(); // one sweep by tag: what left a command's session
  return { stdoutText: result.stdoutText, exitCode: result.exitCode, requests: requestsOfRun };
}
