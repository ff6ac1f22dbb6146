// The examples of README.md, type-checked here; test/readme.test.ts checks
// that each README block is contained in this file, and runs them.
import { createLocalSandbox } from '../src/index.js';
import { lines } from '@sandstream/types';

/** Runs a shell snippet someone else wrote, and returns what it printed. */
export async function runSnippet(script: string): Promise<string> {
  // isolation: 'namespaces': the snippet cannot change the host's files, reach the network,
  // see or signal the host's processes, or leave anything running after the sandbox closes.
  await using sb = createLocalSandbox({ isolation: 'namespaces' });
  const result = await sb.run(['sh', '-c', script], { timeout: 30_000 });
  return result.stdoutText;
}

/** Runs the test suite, printing its output as it comes; true when it passed. */
export async function runTests(cwd: string): Promise<boolean> {
  await using sb = createLocalSandbox({ cwd, graceMs: 1_000 });
  await using proc = sb.stream(['npm', 'test'], { timeout: 300_000, env: { CI: '1' } });
  for await (const line of lines(proc)) {
    console.log(`[${line.stream}] ${line.text.trimEnd()}`);
  }
  const result = await proc.wait();
  return result.exitCode === 0;
}

/** The first line git prints for a revision, or undefined when it fails. */
export async function describeRevision(repo: string, revision: string): Promise<string | undefined> {
  await using sb = createLocalSandbox({ cwd: repo });
  const result = await sb.run(['git', 'log', '-1', '--format=%s', revision], {
    timeout: 10_000,
    maxOutputBytes: 64 * 1024,
  });
  return result.exitCode === 0 ? result.stdoutText.trimEnd() : undefined;
}

/** Sorts lines with the system's sort(1), feeding them one by one. */
export async function sortLines(input: readonly string[]): Promise<string[]> {
  await using sb = createLocalSandbox();
  await using proc = sb.stream(['sort'], { stdin: 'pipe' });
  const output: string[] = [];
  const reading = (async () => {
    for await (const chunk of proc) output.push(new TextDecoder().decode(chunk.data));
  })();
  for (const line of input) await proc.stdin!.write(`${line}\n`);
  await proc.stdin!.end();
  await reading;
  return output.join('').split('\n').filter((line) => line !== '');
}

/** Asks Python on a terminal, as a person would type it; returns what the terminal showed. */
export async function askPython(expression: string): Promise<string> {
  await using sb = createLocalSandbox();
  await using repl = sb.stream(['python3', '-q', '-i'], { pty: { cols: 100, rows: 30 }, stdin: 'pipe' });
  await repl.resize!(120, 40);
  // Typed ahead of the prompt: Python's line editor reads the lines when it is ready. (An
  // end-of-file typed this early would not reach it: the editor switches the terminal to raw
  // mode, where what the line discipline held as end-of-file arrives as another byte.)
  await repl.stdin!.write(`print(${expression})\rexit()\r`);
  let screen = '';
  for await (const chunk of repl) screen += new TextDecoder().decode(chunk.data);
  return screen;
}
