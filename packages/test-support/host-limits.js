// Cuts this host's resources short for a process: few file descriptors
// (RLIMIT_NOFILE) and few processes (RLIMIT_NPROC), for the tests and soak
// runs that prove an adapter turns running out of them into typed errors.
// Node.js cannot set its own limits: util-linux's prlimit sets them on the
// process's pid, and setpriv runs it as another uid when it is root.
import { spawn } from 'node:child_process';
import { accessSync, closeSync, constants, openSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';

/** A util-linux program from the usual directories, or undefined. */
function findExecutable(name) {
  for (const dir of ['/usr/bin', '/bin', '/usr/sbin', '/sbin', '/usr/local/bin']) {
    try {
      accessSync(`${dir}/${name}`, constants.X_OK);
      return `${dir}/${name}`;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** This process's soft and hard limit called `name` in /proc/self/limits (`unlimited` or a number, as text). */
function limitOf(name) {
  const line = readFileSync('/proc/self/limits', 'latin1')
    .split('\n')
    .find((l) => l.startsWith(name));
  const [soft = 'unlimited', hard = 'unlimited'] = line?.slice(name.length).trim().split(/\s+/) ?? [];
  return { soft, hard };
}

/**
 * The uids that own a task now (the real uid of every process listed in
 * /proc), and how many tasks (threads included) each owns.
 */
function tasksByUid() {
  const counts = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    let status;
    try {
      status = readFileSync(`/proc/${entry}/status`, 'latin1');
    } catch {
      continue;
    }
    const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]);
    const threads = Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? 1);
    counts.set(uid, (counts.get(uid) ?? 0) + threads);
  }
  return counts;
}

/** A uid that owns no task, from a range no distribution allocates. */
function unusedUid() {
  const used = tasksByUid();
  for (let uid = 2_000_000_000 + (process.pid % 100_000) * 10; ; uid++) if (!used.has(uid)) return uid;
}

/**
 * The argv that runs `argv` as a uid that owns no task, when this process
 * is root (setpriv, no groups: it reads what others may read and writes
 * where others may, such as /tmp): root is exempt from RLIMIT_NPROC, so
 * {@link limitSelf} can limit processes only in a process of another uid;
 * `env` holds what its environment must change (HOME, which root's is not
 * the other uid's to enter). Otherwise `argv` itself. `{ skip }` with the reason when setpriv is
 * missing.
 */
export function asUnusedUid(argv) {
  if (process.getuid?.() !== 0) return { argv: [...argv], uid: undefined, env: {} };
  const setpriv = findExecutable('setpriv');
  if (setpriv === undefined) return { skip: 'util-linux setpriv is not installed (as root, a process limit needs another uid)' };
  const uid = unusedUid();
  // root's home is not the other uid's to enter (a program that starts commands there gets EACCES).
  return { argv: [setpriv, `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--', ...argv], uid, env: { HOME: tmpdir() } };
}

/** Why {@link limitSelf} cannot work here, or undefined. */
export function limitSelfUnavailable({ processes } = {}) {
  if (findExecutable('prlimit') === undefined) return 'util-linux prlimit is not installed';
  if (processes !== undefined && process.getuid?.() === 0) return 'root is exempt from the process limit (start it through asUnusedUid)';
  return undefined;
}

/**
 * The helper that runs prlimit on this process: a shell started before any
 * limit is lowered, so it keeps this host's limits and can raise this
 * process's back even when this process has no descriptor left to start
 * anything (the request and its answer go through pipes already open).
 */
let helper;
/** The hard limits, read before any was lowered (reading them later needs a descriptor). */
let hardLimits;

function startHelper() {
  const prlimit = findExecutable('prlimit');
  const child = spawn('/bin/sh', ['-c', 'while read -r args; do if "$0" --pid "$1" $args 2>&1; then echo ok; else echo failed; fi; done', prlimit, String(process.pid)], {
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  let text = '';
  const waiters = [];
  child.stdout.setEncoding('utf8').on('data', (data) => {
    text += data;
    for (let newline = text.indexOf('\n'); newline >= 0; newline = text.indexOf('\n')) {
      const line = text.slice(0, newline);
      text = text.slice(newline + 1);
      if (line === 'ok' || line === 'failed') waiters.shift()?.(line === 'ok' ? undefined : new Error(`prlimit failed: ${said.trim()}`));
      else said = `${said}${line}\n`;
    }
  });
  let said = '';
  child.once('error', (error) => waiters.splice(0).forEach((settle) => settle(error)));
  child.once('close', () => waiters.splice(0).forEach((settle) => settle(new Error('the prlimit helper ended'))));
  return {
    child,
    request(args) {
      return new Promise((resolve, reject) => {
        said = '';
        waiters.push((error) => (error === undefined ? resolve() : reject(error)));
        child.stdin.write(`${args.join(' ')}\n`);
      });
    },
  };
}

/**
 * Lowers this process's soft limits, through prlimit on its own pid
 * (Node.js cannot set its limits, and raises the descriptor limit to the
 * hard one at its start, so a limit given to it before it starts does
 * not hold). `openFiles`: RLIMIT_NOFILE; `processes`: RLIMIT_NPROC, as
 * that many tasks above those this uid owns now (the limit counts every
 * task of the uid, threads included). The hard limits stay, so
 * {@link liftSelfLimits} can raise them back, and what this process started
 * before keeps its own. Resolves with the limits set.
 */
export async function limitSelf({ openFiles, processes } = {}) {
  const unavailable = limitSelfUnavailable({ processes });
  if (unavailable !== undefined) throw new Error(unavailable);
  const args = [];
  const set = {};
  if (openFiles !== undefined) {
    args.push(`--nofile=${openFiles}:`);
    set.openFiles = openFiles;
  }
  if (processes !== undefined) {
    set.processes = (tasksByUid().get(process.getuid?.() ?? -1) ?? 0) + processes;
    args.push(`--nproc=${set.processes}:`);
  }
  hardLimits ??= { openFiles: limitOf('Max open files').hard, processes: limitOf('Max processes').hard };
  helper ??= startHelper();
  if (args.length > 0) await helper.request(args);
  return set;
}

/**
 * Raises this process's soft limits of descriptors and processes back to
 * the hard ones, through the helper {@link limitSelf} started (so it works
 * while this process has no descriptor left), and ends the helper.
 */
export async function liftSelfLimits() {
  if (helper === undefined) return;
  const current = helper;
  helper = undefined;
  try {
    await current.request([`--nofile=${hardLimits.openFiles}:`, `--nproc=${hardLimits.processes}:`]);
  } finally {
    current.child.stdin.end();
  }
}

/** This process's soft limits of descriptors and processes (`unlimited` or a number, as text). */
export function softLimits() {
  return { openFiles: limitOf('Max open files').soft, processes: limitOf('Max processes').soft };
}

/** What a promise gave: `{ ok: value }`, or the error's class, code and message. */
function outcome(promise) {
  return promise.then(
    (value) => ({ ok: value }),
    (error) => ({ error: error?.constructor?.name, code: error?.code, message: String(error?.message) }),
  );
}

/** Everything a Process streams, as text; what arrived when the loop fails. */
function collectText(proc) {
  let text = '';
  const decoder = new TextDecoder();
  return (async () => {
    for await (const chunk of proc) text += decoder.decode(chunk.data, { stream: true });
    return text;
  })().catch(() => text);
}

/**
 * Runs this process out of descriptors under `sandbox` (a remote adapter's,
 * whose emulator runs elsewhere): two commands wait for a line on standard
 * input; then a low limit, and every descriptor left held, while one
 * command is written to and another is started; then room again, the
 * other command is given its line and the first is killed. Resolves with
 * what each step gave: `write`, `start`, `kept` (the write once there is
 * room), `ends` (both commands' exit), `read` (their output), `after` (a
 * start once there is room), each an `{ ok }` or `{ error, code, message }`.
 */
export async function runOutOfDescriptors(sandbox) {
  const report = {};
  const script = 'read -r x; echo "got $x"; exit 3';
  const [cut, kept] = [sandbox.stream(['sh', '-c', script], { stdin: 'pipe' }), sandbox.stream(['sh', '-c', script], { stdin: 'pipe' })];
  await Promise.all([cut.started(), kept.started()]);
  const read = [collectText(cut), collectText(kept)];
  // Iterated first: wait() alone would discard the output.
  const ends = [cut, kept].map((proc) => outcome(proc.wait().then((r) => ({ exitCode: r.exitCode, signal: r.signal }))));
  await limitSelf({ openFiles: readdirSync('/proc/self/fd').length + 8 });
  const held = [];
  for (;;) {
    try {
      held.push(openSync('/dev/null', 'r'));
    } catch {
      break;
    }
  }
  report.write = await outcome(cut.stdin.write('lost\n'));
  report.start = await outcome(sandbox.run(['echo', 'refused']));
  for (const fd of held) closeSync(fd);
  await liftSelfLimits();
  // The command whose write failed still waits for input nobody can vouch for: ended by its owner.
  report.kept = await outcome(kept.stdin.write('hello\n').then(() => kept.stdin.end()));
  await cut.kill();
  report.ends = await Promise.all(ends);
  report.read = await Promise.all(read);
  report.after = await outcome(sandbox.run(['echo', 'after']).then((r) => r.stdoutText));
  return report;
}

/**
 * Runs `argv` (a Node.js script that prints one JSON document) as a child
 * process, SIGKILLed after `boundMs`; resolves with its exit status, the
 * parsed document (undefined when its output was not JSON) and its stderr.
 */
export async function runJsonChild(argv, { env = process.env, boundMs = 120_000 } = {}) {
  const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env });
  let out = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text) => (out += text));
  child.stderr.setEncoding('utf8').on('data', (text) => (stderr += text));
  const timer = setTimeout(() => child.kill('SIGKILL'), boundMs);
  const code = await new Promise((resolve) => child.once('close', resolve)).finally(() => clearTimeout(timer));
  let report;
  try {
    report = JSON.parse(out);
  } catch {
    report = undefined;
  }
  return { code, report, stderr };
}
