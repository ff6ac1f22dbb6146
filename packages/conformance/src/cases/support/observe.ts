/**
 * How cases observe the sandbox without concluding anything from a sleep.
 *
 * - Every bound derives from the backend's measured round trip
 *   (`ctx.timeoutFor`), never from a fixed number alone.
 * - A read through a helper command frames its output, so a read that
 *   failed, or whose output the adapter lost, is a failure, never "absent".
 *   (The engine checks the sandbox's tools before the run; a helper that
 *   fails afterwards was failed by the adapter.)
 * - A negative check ("nothing ran", "the process is gone") first shows that
 *   the observation could have seen the opposite: a later command's marker
 *   exists, the liveness probe saw the process alive before.
 */
import type { ExecResult, Process } from '@sandstream/types';
import { ConformanceFailure, describeError, HarnessError } from '../../assert.js';
import type { CaseContext } from '../../context.js';
import { bound } from '../../timing.js';

// The kit's timing helpers, for the cases as before; the engine owns them (timing.ts).
export { bound, DELIVERY_FLOOR_MS, deliveryBound, roundTrip, settledWithin, watchHostLag, type LagWatch } from '../../timing.js';

/** The sandbox's termination settings and where the kit found them. */
export interface Termination {
  readonly graceMs: number;
  readonly killWaitMs: number;
  /** Where the settings came from, for failure messages. */
  readonly source: string;
}

/** Default wait for an exit report after SIGKILL when the sandbox does not state its own. */
const DEFAULT_KILL_WAIT_MS = 5_000;

/**
 * The termination settings a case measures against: the context's (the
 * engine reads `sandbox.termination`), else what the sandbox states, else
 * the run's options.
 */
export function termination(ctx: CaseContext): Termination {
  const fromContext = (ctx as { termination?: Partial<Termination> }).termination;
  if (typeof fromContext?.graceMs === 'number' && typeof fromContext.killWaitMs === 'number') {
    return { graceMs: fromContext.graceMs, killWaitMs: fromContext.killWaitMs, source: fromContext.source ?? 'the case context' };
  }
  const stated = (ctx.sandbox as { termination?: { graceMs?: unknown; killWaitMs?: unknown } }).termination;
  if (typeof stated?.graceMs === 'number' && typeof stated.killWaitMs === 'number') {
    return { graceMs: stated.graceMs, killWaitMs: stated.killWaitMs, source: "the sandbox's `termination`" };
  }
  return { graceMs: ctx.graceMs, killWaitMs: DEFAULT_KILL_WAIT_MS, source: 'the run options (the sandbox states no termination)' };
}

/** A helper command the kit runs through `run()`. Its failure to run is the adapter's. */
async function helper(ctx: CaseContext, argv: readonly string[]): Promise<ExecResult> {
  return ctx.exec(argv);
}

const END = '<sandstream:end>';
const ABSENT = '<sandstream:absent>';
// Exit 0 and END after the content: the file exists. Exit 1 and ABSENT: it does not.
const READ_SCRIPT = 'if [ -e "$1" ]; then cat "$1" || exit 3; printf "%s" "$2"; else printf "%s" "$3"; exit 1; fi';

/**
 * Reads a file inside the sandbox: its content, or undefined when it does
 * not exist. A read that fails, or whose framing the adapter lost, is the
 * adapter's failure, never "absent".
 */
export async function readMarker(ctx: CaseContext, path: string): Promise<string | undefined> {
  const result = await helper(ctx, ['sh', '-c', READ_SCRIPT, 'sh', path, END, ABSENT]);
  const out = result.stdoutText;
  if (result.exitCode === 0 && out.endsWith(END)) return out.slice(0, -END.length);
  if (result.exitCode === 1 && out === ABSENT) return undefined;
  if (result.exitCode === 0 || result.exitCode === 1) {
    throw new ConformanceFailure(
      `run() lost output of a helper command that reads ${path}: it printed ${JSON.stringify(out.slice(-80))}, ` +
        `which lacks the trailer the command writes last`,
    );
  }
  // The kit checked before the run that the sandbox has sh and cat: a helper
  // that fails now was failed by the adapter (its argv, its output, its exit).
  throw new ConformanceFailure(
    `a helper command reading ${path} failed under run() (exit ${result.exitCode}/${result.signal}): ${result.stderrText.trim() || 'no message'}`,
  );
}

/** Creates an empty marker file through a helper command. */
export async function touch(ctx: CaseContext, path: string): Promise<void> {
  const result = await helper(ctx, ['sh', '-c', ': > "$1"', 'sh', path]);
  if (result.exitCode !== 0) {
    throw new ConformanceFailure(`a helper command creating ${path} failed under run() (exit ${result.exitCode}/${result.signal}): ${result.stderrText.trim()}`);
  }
}

/** Polls until `read` returns a value, within `withinMs` (already a measured bound). */
export async function pollFor<T>(ctx: CaseContext, read: () => Promise<T | undefined>, withinMs: number, what: string): Promise<T> {
  return ctx.poll(read, withinMs, what);
}

/**
 * The pid a command recorded in `path`. Waits a measured bound for it; a
 * file that never holds a pid is a failure of the command's start, never a
 * pid of 0 or NaN that a liveness probe would call gone.
 */
export async function readPid(ctx: CaseContext, path: string, what: string): Promise<number> {
  const within = await bound(ctx, 5_000);
  const text = await ctx.poll(
    async () => {
      const content = await readMarker(ctx, path);
      return content !== undefined && /^[0-9]+\s*$/.test(content) && Number(content) > 0 ? content : undefined;
    },
    within,
    `${what} never recorded its pid in ${path}`,
  );
  return Number(text.trim());
}

/**
 * A scratch directory. Where `ctx.scratch()` cannot create one, checks
 * whether the adapter lost the helper's output (its failure, `fail`) rather
 * than the sandbox lacking `mktemp` (a harness error).
 */
export async function scratch(ctx: CaseContext): Promise<string> {
  try {
    return await ctx.scratch();
  } catch (error) {
    if (!(error instanceof HarnessError)) throw error;
    const probe = await helper(ctx, ['sh', '-c', 'printf "%s\\n" first; printf "%s" last']);
    if (probe.exitCode === 0 && probe.stdoutText !== 'first\nlast') {
      throw new ConformanceFailure(
        `run() loses output: a helper printing "first\\nlast" delivered ${JSON.stringify(probe.stdoutText)} ` +
          `(so creating a scratch directory failed: ${error.message})`,
      );
    }
    throw error;
  }
}

/**
 * Concludes that a command which would have created `path`, had it run,
 * did not. Before looking, a later command started the same way (`later`,
 * which must create `later.path`) must have completed and left its marker:
 * the sandbox ran what came after, so the earlier command had as long to
 * act. No sleep decides it.
 */
export async function expectNeverRan(
  ctx: CaseContext,
  path: string,
  what: string,
  later: { readonly path: string; run(): Promise<unknown> },
): Promise<void> {
  await later.run();
  // The later command has completed: its marker exists now, or the adapter did not run it as given.
  if ((await readMarker(ctx, later.path)) === undefined) {
    throw new ConformanceFailure(
      `${what}? Cannot tell: a later command that creates ${later.path} completed without creating it, so the adapter did not run it as given`,
    );
  }
  if ((await readMarker(ctx, path)) !== undefined) throw new ConformanceFailure(what);
}

/** A process the case expects, named for failure messages. */
export interface Watched {
  readonly pid: number;
  /** What it is: "the command itself", "a background child", ... */
  readonly role: string;
}

const DESCRIBE_SCRIPT = 'if [ -r "/proc/$1/cmdline" ]; then tr "\\000" " " < "/proc/$1/cmdline"; fi';

/** "pid 123 (the command itself: sh -c ...)", with the command line when the sandbox has /proc. */
export async function describeProcess(ctx: CaseContext, watched: Watched): Promise<string> {
  let cmdline = '';
  try {
    if (!ctx.signal.aborted) cmdline = (await ctx.sandbox.run(['sh', '-c', DESCRIBE_SCRIPT, 'sh', String(watched.pid)], { timeout: 5_000 })).stdoutText.trim();
  } catch {
    // Only for the message.
  }
  const flat = cmdline.replace(/\s+/g, ' ');
  const shown = flat.length > 120 ? `${flat.slice(0, 117)}...` : flat;
  return `pid ${watched.pid} (${watched.role}${shown === '' ? '' : `: ${shown}`})`;
}

/**
 * Fails as a harness error unless the liveness probe sees every process
 * alive now: a probe that cannot see them would call them gone later.
 */
export async function expectAlive(ctx: CaseContext, processes: readonly Watched[], token: string): Promise<void> {
  for (const watched of processes) {
    if (!(await ctx.isAlive(watched.pid, token))) {
      throw new HarnessError(
        `the liveness probe does not see ${watched.role} (pid ${watched.pid}) although it is running; its absence later would prove nothing`,
      );
    }
  }
}

/**
 * Fails unless none of `processes` is alive at the first look: for checks
 * right after a result or a disposal, when nothing may outlive it. The
 * failure names every survivor.
 */
export async function expectGoneNow(ctx: CaseContext, processes: readonly Watched[], token: string, what: string): Promise<void> {
  const survivors: Watched[] = [];
  for (const watched of processes) if (await ctx.isAlive(watched.pid, token)) survivors.push(watched);
  if (survivors.length === 0) return;
  const named = await Promise.all(survivors.map((s) => describeProcess(ctx, s)));
  throw new ConformanceFailure(`${what}: ${named.join(', ')} still running`);
}

/** Waits a measured bound (at least `atLeast`) for every process to be gone; the failure names the survivors. */
export async function expectGoneWithin(
  ctx: CaseContext,
  processes: readonly Watched[],
  token: string,
  atLeast: number,
  what: string,
): Promise<void> {
  const within = await bound(ctx, atLeast);
  const deadline = performance.now() + within;
  for (;;) {
    const survivors: Watched[] = [];
    for (const watched of processes) if (await ctx.isAlive(watched.pid, token)) survivors.push(watched);
    if (survivors.length === 0) return;
    if (performance.now() > deadline) {
      const named = await Promise.all(survivors.map((s) => describeProcess(ctx, s)));
      throw new ConformanceFailure(`${what}: ${named.join(', ')} still running ${within} ms later`);
    }
    await ctx.sleep(25);
  }
}

/**
 * A failure for `error` (a rejected disposal or wait()) naming which of
 * `processes` are still alive, so a teardown failure says which process
 * survived rather than only that no exit came.
 */
export async function survivorsFailure(
  ctx: CaseContext,
  processes: readonly Watched[],
  token: string,
  what: string,
  error: unknown,
): Promise<Error> {
  if (error instanceof ConformanceFailure || error instanceof HarnessError) return error;
  let alive: string[] = [];
  try {
    for (const watched of processes) {
      if (await ctx.isAlive(watched.pid, token)) alive.push(await describeProcess(ctx, watched));
    }
  } catch {
    alive = [];
  }
  const survivors = alive.length === 0 ? 'no recorded process is alive' : `still running: ${alive.join(', ')}`;
  return new ConformanceFailure(`${what} rejected with ${describeError(error)}; ${survivors}`);
}

/** Runs `settle` (a disposal, a wait()); a rejection becomes {@link survivorsFailure}. */
export async function explainingSurvivors<T>(
  ctx: CaseContext,
  processes: readonly Watched[],
  token: string,
  what: string,
  settle: () => Promise<T>,
): Promise<T> {
  try {
    return await settle();
  } catch (error) {
    throw await survivorsFailure(ctx, processes, token, what, error);
  }
}

/** Disposes `proc`; a rejection names which of `processes` survived. */
export function disposeExplained(ctx: CaseContext, proc: Process, processes: readonly Watched[], token: string): Promise<void> {
  return explainingSurvivors(ctx, processes, token, 'disposal', () => proc[Symbol.asyncDispose]());
}
