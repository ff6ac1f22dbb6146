/**
 * Reading a command on a terminal (spec 1.5). A terminal has one stream,
 * and its bytes are the line discipline's: a case waits for a pattern in
 * what arrived so far, bounded by evidence where it has some (the command
 * marks in its scratch directory that it printed what is awaited), and
 * reads the rest once it wants the end.
 */
import type { ExecResult, OutputChunk, Process, TerminalSize } from '@sandstream/types';
import { check, checkEqual, ConformanceFailure } from '../../assert.js';
import type { CaseContext } from '../../context.js';
import { deliveryBound, settledWithinLag } from '../../timing.js';
import { settledAtOnce } from './at-once.js';
import { nextChunk } from './background.js';
import { expectAlive, readPid, scratch, type Watched } from './observe.js';

/** The size most cases ask for: neither dimension a default, so that a size not passed on shows. */
export const SIZE: TerminalSize = Object.freeze({ cols: 101, rows: 37 });

/** Text of terminal bytes, one character per byte, CR LF shown as it arrived. */
export function latin1(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('latin1');
}

/** A Process on a terminal, read as far as a case needs. */
export class TerminalReader {
  readonly #iterator: AsyncIterator<OutputChunk, undefined>;
  readonly #stdout: Buffer[] = [];
  #stderrBytes = 0;
  #ended = false;

  constructor(
    private readonly ctx: CaseContext,
    proc: Process,
    /** The scratch directory where the command marks what it printed. */
    private readonly dir: string,
  ) {
    this.#iterator = proc[Symbol.asyncIterator]();
  }

  /** Everything the terminal delivered so far. */
  get bytes(): Buffer {
    return Buffer.concat(this.#stdout);
  }

  /** The same, as text (one character per byte). */
  get text(): string {
    return this.bytes.toString('latin1');
  }

  /** Bytes delivered as `stderr`, which a terminal has none of. */
  get stderrBytes(): number {
    return this.#stderrBytes;
  }

  /**
   * Reads until `pattern` is in what arrived. Once the command created
   * `marker` (a name in the scratch directory) it has printed what is
   * awaited, and a Process that delivers nothing more fails within a
   * measured bound instead of the case's limit.
   */
  async until(pattern: string | RegExp, marker: string, what: string): Promise<void> {
    const found = (): boolean => (typeof pattern === 'string' ? this.text.includes(pattern) : pattern.test(this.text));
    while (!found()) {
      if (this.#ended) throw new ConformanceFailure(`${what}: the Process ended without it; the terminal delivered ${JSON.stringify(this.text.slice(-200))}`);
      const next = await nextChunk(this.ctx, this.#iterator, `${this.dir}/${marker}`, what);
      this.#take(next);
    }
  }

  /**
   * Reads until `pattern` is in what arrived, which is due within the
   * delivery bound: what the case did (a write, a resize) has taken effect
   * and the command reacts at once.
   */
  async soon(pattern: string | RegExp, what: string): Promise<void> {
    const since = performance.now();
    const reading = (async () => {
      const found = (): boolean => (typeof pattern === 'string' ? this.text.includes(pattern) : pattern.test(this.text));
      while (!found()) {
        if (this.#ended) throw new ConformanceFailure(`${what}: the Process ended without it; the terminal delivered ${JSON.stringify(this.text.slice(-200))}`);
        this.#take(await this.#iterator.next());
      }
    })();
    reading.catch(() => undefined);
    const outcome = await settledWithinLag(reading, await deliveryBound(this.ctx));
    if (outcome === 'pending') {
      throw new ConformanceFailure(`${what}: not there ${Math.round(performance.now() - since)} ms later; the terminal delivered ${JSON.stringify(this.text.slice(-200))}`);
    }
    if (outcome.rejected) throw outcome.reason;
  }

  /**
   * Reads to the end of the Process. Once the command created `marker` it
   * has written everything, and a Process that delivers nothing more fails
   * within a measured bound instead of the case's limit.
   */
  async rest(marker: string, what: string): Promise<Buffer> {
    while (!this.#ended) this.#take(await nextChunk(this.ctx, this.#iterator, `${this.dir}/${marker}`, what));
    return this.bytes;
  }

  #take(next: IteratorResult<OutputChunk, undefined>): void {
    if (next.done === true) {
      this.#ended = true;
      return;
    }
    if (next.value.stream === 'stderr') this.#stderrBytes += next.value.data.byteLength;
    else this.#stdout.push(Buffer.from(next.value.data));
  }
}

/** A command on a terminal that has printed "ready": its Process, disposed with this, and a reader past the line. */
export interface ReadyTerminal extends AsyncDisposable {
  readonly proc: Process;
  readonly reader: TerminalReader;
}

/**
 * Starts `sh -c '<before>echo ready; : > "$1/ready"; <after>'` on a terminal of {@link SIZE}, in
 * a scratch directory of its own, and reads until "ready" (bounded by the marker, as
 * {@link TerminalReader.until} is). A start that fails disposes of the Process.
 */
export async function readyOnTerminal(ctx: CaseContext, after: string, options: { before?: string; stdin?: 'pipe' } = {}): Promise<ReadyTerminal> {
  const dir = await scratch(ctx);
  const script = `${options.before ?? ''}echo ready; : > "$1/ready"; ${after}`;
  const proc = ctx.sandbox.stream(['sh', '-c', script, 'sh', dir], { pty: SIZE, ...(options.stdin === undefined ? {} : { stdin: options.stdin }) });
  const reader = new TerminalReader(ctx, proc, dir);
  try {
    await reader.until('ready', 'ready', 'the line "ready"');
  } catch (error) {
    await proc[Symbol.asyncDispose]().catch(() => undefined);
    throw error;
  }
  return { proc, reader, [Symbol.asyncDispose]: () => proc[Symbol.asyncDispose]() };
}

/**
 * The sh of a command that leads its terminal's foreground group: prints
 * `ids=<pid> <group> <foreground group>` from /proc, which every Linux
 * sandbox has and which needs no `ps` that a small image may lack.
 */
export const PROCESS_IDS = 's=$(cat /proc/$$/stat); set -- ${s##*) }; echo "ids=$$ $3 $6"';

/** What the command on a terminal reports of itself, one `name=value` line each. */
export const IDENTITY = [
  'for fd in 0 1 2; do if [ -t $fd ]; then echo "tty$fd=yes"; else echo "tty$fd=no"; fi; done',
  'echo "name=$(tty)"',
  'echo "size=$(stty size)"',
  'echo "term=$TERM"',
  PROCESS_IDS,
  // The modes of a fresh terminal that the spec names, each printed when set (`-icanon` when not).
  'echo "modes=$(stty -a | tr " ;" "\\n\\n" | grep -x -e icanon -e echo -e isig -e icrnl -e opost -e onlcr | sort | tr "\\n" " ")"',
].join('\n');

/** The `name=value` lines of `text`, CR LF read as a line end. */
export function fields(text: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const at = line.indexOf('=');
    if (at > 0) map.set(line.slice(0, at), line.slice(at + 1).trim());
  }
  return map;
}

/** Checks what IDENTITY printed, for a terminal of `size`. */
export function checkIdentity(text: string, term: string, what: string): void {
  const seen = fields(text);
  for (const fd of [0, 1, 2]) checkEqual(seen.get(`tty${fd}`), 'yes', `${what}: isatty(${fd})`);
  const name = seen.get('name') ?? '';
  check(name.startsWith('/dev/'), `${what}: tty names no terminal (it printed ${JSON.stringify(name)})`);
  checkEqual(seen.get('size'), `${SIZE.rows} ${SIZE.cols}`, `${what}: stty size (rows cols) for a terminal of ${SIZE.cols}x${SIZE.rows}`);
  checkEqual(seen.get('term'), term, `${what}: TERM`);
  const ids = (seen.get('ids') ?? '').split(' ');
  check(ids.length === 3 && ids[0] === ids[1], `${what}: the command does not lead its process group (pid, group, terminal's foreground group: ${JSON.stringify(seen.get('ids'))})`);
  check(ids[1] === ids[2], `${what}: the command's group is not the terminal's foreground group (pid, group, foreground group: ${JSON.stringify(seen.get('ids'))})`);
  checkEqual(seen.get('modes'), 'echo icanon icrnl isig onlcr opost', `${what}: the modes set among icanon, echo, isig, icrnl, opost, onlcr`);
}

/**
 * The result of `proc` within the delivery bound: what the case did has ended it. Still pending
 * then, it is judged only once the backend answered: a round trip measured now extends the bound
 * to five of them where the backend has slowed since the case began, and stalls of the kit's own
 * process are added (a terminal's 0x03 must reach the shell, which must run its trap, on a
 * machine that may be loaded).
 */
export async function endsSoon(ctx: CaseContext, proc: Process, what: string): Promise<ExecResult> {
  const began = performance.now();
  const { outcome, within } = await settledAtOnce(ctx, proc.wait());
  if (outcome === 'pending') throw new ConformanceFailure(`${what}: the command had not ended ${Math.round(performance.now() - began)} ms later (bound: ${within} ms, the delivery bound grown to five round trips measured once it had passed)`);
  if (outcome.rejected) throw outcome.reason;
  return outcome.value;
}

/**
 * A command that ignores `ignored` (SIGHUP, or SIGHUP and SIGTERM; so does every process it
 * starts: an ignored signal stays ignored across exec), with a job that job control puts in a
 * process group of its own in the terminal's session. Only the termination sequence on the whole
 * session ends both: ignoring SIGTERM too, only its SIGKILL, after the grace period.
 */
export function stubbornScript(ignored: 'HUP' | 'HUP TERM'): string {
  return [
    'D=$1',
    `trap '' ${ignored}`,
    'set -m 2>/dev/null',
    'sh -c \'echo $$ > "$0/job"; while :; do sleep 1; done\' "$D" &',
    'set +m 2>/dev/null',
    'echo $$ > "$D/leader"',
    'echo ready; : > "$D/ready"',
    'while :; do sleep 1; done',
  ].join('\n');
}

/** A stubborn command's processes, named by what they ignore, once they are seen alive. */
export async function stubbornProcesses(ctx: CaseContext, dir: string, ignored: 'HUP' | 'HUP TERM'): Promise<Watched[]> {
  const signals = ignored === 'HUP' ? 'SIGHUP' : 'SIGHUP and SIGTERM';
  const processes: Watched[] = [
    { pid: await readPid(ctx, `${dir}/leader`, 'the command on a terminal'), role: `the command itself, ignoring ${signals}` },
    { pid: await readPid(ctx, `${dir}/job`, 'its job'), role: `a job in a process group of its own in the terminal's session, ignoring ${signals}` },
  ];
  await expectAlive(ctx, processes, dir);
  return processes;
}

/** Starts {@link stubbornScript} on a terminal, and returns its two processes once they are seen alive. */
export async function stubbornSession(
  ctx: CaseContext,
  ignored: 'HUP' | 'HUP TERM',
  options: { timeout?: number; signal?: AbortSignal },
): Promise<{ proc: Process; dir: string; processes: Watched[] }> {
  const dir = await scratch(ctx);
  const proc = ctx.sandbox.stream(['sh', '-c', stubbornScript(ignored), 'sh', dir], { pty: SIZE, ...options });
  return { proc, dir, processes: await stubbornProcesses(ctx, dir, ignored) };
}
