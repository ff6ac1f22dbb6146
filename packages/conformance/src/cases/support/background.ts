/**
 * Background commands and attach (spec 1.2, ADR-0036), as the cases see
 * them: the calls an adapter with `attach` must have, the burst command
 * whose replay the kit checks without a race, and the check D = T[s..].
 *
 * The burst command writes burst 1 on both streams, creates a marker and
 * waits for a trigger file; the kit waits for the marker, attaches and
 * creates the trigger; the command writes burst 2 and ends. Every 256-byte
 * block of a stream starts with its stream's letter and its number
 * (`o0000042`), so a delivery that starts at the wrong offset, repeats or
 * drops a block is told apart from one that is merely short.
 */
import { hasCapability, type BackgroundProcess, type CommandInfo, type ExecResult, type OutputChunk, type Sandbox, type StreamName } from '@sandstream/types';
import { check, ConformanceFailure, describeError } from '../../assert.js';
import type { CaseContext } from '../../context.js';
import { printfFormat } from './collect.js';
import { bound, readMarker, scratch, settledWithin } from './observe.js';
import { startedOnEvidence } from './started-evidence.js';

/** One block of a stream: an 8-byte header and 248 bytes of payload. */
export const BLOCK = 256;
const HEADER = 8;
const MIB = 1024 * 1024;
/** What `replay-tail` promises at least, per stream. */
export const TAIL_PROMISE = MIB;

/** The calls of spec 1.2 an adapter that advertises `attach` must have. */
export interface AttachCalls {
  attach(commandId: string, options?: { replay?: boolean }): Promise<BackgroundProcess>;
  commands(): Promise<readonly CommandInfo[]>;
}

/** `attach` and `commands` of the case's sandbox; failing when a sandbox advertising `attach` lacks them. */
export function attachCalls(sandbox: Sandbox): AttachCalls {
  const { attach, commands } = sandbox;
  check(typeof attach === 'function', 'the sandbox advertises "attach" but has no attach() method');
  check(typeof commands === 'function', 'the sandbox advertises "attach" but has no commands() method');
  return { attach: (id, options) => attach.call(sandbox, id, options), commands: () => commands.call(sandbox) };
}

/** Starts `argv` with `background: true`, awaiting `started()`; a synchronous throw or a failed start is the adapter's failure. */
export async function startBackground(ctx: CaseContext, argv: readonly string[]): Promise<BackgroundProcess> {
  let proc: BackgroundProcess;
  try {
    proc = ctx.sandbox.stream(argv, { background: true });
  } catch (error) {
    throw new ConformanceFailure(`stream() with background: true threw ${describeError(error)}`);
  }
  try {
    await startedOnEvidence(ctx, proc, argv);
  } catch (error) {
    await proc[Symbol.asyncDispose]().catch(() => undefined);
    if (error instanceof ConformanceFailure) throw error;
    throw new ConformanceFailure(`started() of a background command rejected with ${describeError(error)}`);
  }
  const id = proc.commandId;
  check(typeof id === 'string' && id !== '', `a started background Process has commandId ${JSON.stringify(id)}, expected a non-empty string`);
  check(typeof proc.detach === 'function', 'a Process of stream() with background: true has no detach() method');
  return proc;
}

/** The entry of `commands()` for `id`, or undefined. */
export async function listed(calls: AttachCalls, id: string): Promise<CommandInfo | undefined> {
  const list = await calls.commands();
  check(Array.isArray(list), `commands() resolved with ${JSON.stringify(list)}, expected an array`);
  return list.find((info) => info.commandId === id);
}

/**
 * Runs `body` while a witness, a background command of its own, runs: `commands()` must list it
 * whenever the case shows that it lists something else no longer ({@link expectUnlisted}).
 */
export async function withWitness<T>(ctx: CaseContext, calls: AttachCalls, body: (witness: string) => Promise<T>): Promise<T> {
  const proc = await startBackground(ctx, ['sh', '-c', 'while :; do sleep 0.05; done', 'sh', ctx.token('witness')]);
  try {
    return await body(proc.commandId!);
  } finally {
    await proc[Symbol.asyncDispose]().catch(() => undefined);
  }
}

/** Fails unless `commands()` lists the running witness but not `id`: an empty list proves nothing. */
export async function expectUnlisted(calls: AttachCalls, id: string, witness: string, what: string): Promise<void> {
  const list = await calls.commands();
  const shown = JSON.stringify(list.map((info) => `${info.commandId} (${info.state})`));
  check(list.some((info) => info.commandId === witness), `commands() does not list ${witness}, a background command that still runs, so its not listing ${id} would prove nothing; it lists ${shown}`);
  check(!list.some((info) => info.commandId === id), `${what}: commands() still lists ${id}; it lists ${shown}`);
}

/** The ids `commands()` lists, for failure messages. */
export async function listedIds(calls: AttachCalls): Promise<string> {
  return JSON.stringify((await calls.commands()).map((info) => `${info.commandId} (${info.state})`));
}

/** How many blocks each burst writes per stream. */
export interface Bursts {
  readonly stdout: readonly [number, number];
  readonly stderr: readonly [number, number];
}

/** The bursts of `attach.replay-tail`: 3 MiB then 64 KiB on stdout, 64 KiB then 16 KiB on stderr. */
export const TAIL_BURSTS: Bursts = { stdout: [(3 * MIB) / BLOCK, 256], stderr: [256, 64] };
/** Bursts past a pipe buffer, for the cases that do not measure the tail. */
export const SMALL_BURSTS: Bursts = { stdout: [1024, 256], stderr: [256, 64] };

/** How the command ends after burst 2: an exit code, or its own SIGTERM. */
export type Ending = number | 'term';

/**
 * The burst command (see the module comment). `$1` is the scratch directory: it appends a line
 * to `starts` when it starts, creates `burst1` after burst 1 and `ending` right before it ends,
 * and waits for `trigger` in between.
 */
const BURST_SCRIPT = [
  'D=$1; A=$2; B=$3',
  'echo start >> "$D/starts"',
  'w() { i=$2; while [ "$i" -lt "$3" ]; do printf "$1%07d" "$i"; if [ $((i % 2)) -eq 0 ]; then printf "$A"; else printf "$B"; fi; i=$((i + 1)); done; }',
  'w o 0 "$4"; w e 0 "$5" >&2',
  ': > "$D/burst1"',
  'while [ ! -e "$D/trigger" ]; do sleep 0.01; done',
  'w o "$4" "$6"; w e "$5" "$7" >&2',
  ': > "$D/ending"',
  'case "$8" in term) kill -TERM $$; sleep 5; exit 99;; *) exit "$8";; esac',
].join('\n');

/** The two payloads of a block: every byte value between them where output is byte-exact, printable ASCII where it is text. */
function payloads(sandbox: Sandbox): [Uint8Array, Uint8Array] {
  const size = BLOCK - HEADER;
  if (hasCapability(sandbox.capabilities, 'binary-output')) {
    return [Uint8Array.from({ length: size }, (_, k) => k), Uint8Array.from({ length: size }, (_, k) => k + HEADER)];
  }
  // ASCII only: a tail may begin anywhere, and a text backend could not deliver half a character.
  const a = Uint8Array.from({ length: size }, (_, k) => (k === size - 1 ? 0x0a : 0x20 + (k % 95)));
  const b = Uint8Array.from({ length: size }, (_, k) => (k === size - 1 ? 0x0a : 0x7e - (k % 95)));
  return [a, b];
}

/** A burst command of one case and what it will write. */
export interface BurstCommand {
  readonly argv: string[];
  readonly dir: string;
  readonly bursts: Bursts;
  /** T per stream: burst 1 and burst 2. */
  readonly expected: Record<StreamName, Uint8Array>;
  /** Bytes of burst 1 per stream. */
  readonly first: Record<StreamName, number>;
}

/** The burst command in a fresh scratch directory. */
export async function burstCommand(ctx: CaseContext, bursts: Bursts, ending: Ending = 0): Promise<BurstCommand> {
  const dir = await scratch(ctx);
  const [a, b] = payloads(ctx.sandbox);
  const stream = (letter: string, blocks: number): Uint8Array => {
    const out = new Uint8Array(blocks * BLOCK);
    for (let i = 0; i < blocks; i++) {
      out.set(Buffer.from(`${letter}${String(i).padStart(7, '0')}`, 'latin1'), i * BLOCK);
      out.set(i % 2 === 0 ? a : b, i * BLOCK + HEADER);
    }
    return out;
  };
  const argv = ['sh', '-c', BURST_SCRIPT, 'sh', dir, printfFormat(a), printfFormat(b)];
  argv.push(String(bursts.stdout[0]), String(bursts.stderr[0]));
  argv.push(String(bursts.stdout[0] + bursts.stdout[1]), String(bursts.stderr[0] + bursts.stderr[1]), String(ending));
  // Unused by the script: the token by which the kit sees the command running (started-evidence.ts).
  argv.push(ctx.token('burst'));
  return {
    argv,
    dir,
    bursts,
    expected: { stdout: stream('o', bursts.stdout[0] + bursts.stdout[1]), stderr: stream('e', bursts.stderr[0] + bursts.stderr[1]) },
    first: { stdout: bursts.stdout[0] * BLOCK, stderr: bursts.stderr[0] * BLOCK },
  };
}

/**
 * Waits until the command has written burst 1 (its marker exists). Writing megabytes may take a
 * while on a slow backend; a command that ended, or is no longer listed, meanwhile fails at once.
 */
export async function untilBurst1(ctx: CaseContext, command: BurstCommand, calls: AttachCalls, id: string): Promise<void> {
  const within = await bound(ctx, 20_000);
  await ctx.poll(
    async () => {
      if ((await readMarker(ctx, `${command.dir}/burst1`)) !== undefined) return true;
      const info = await listed(calls, id);
      if (info?.state === 'running') return undefined;
      if ((await readMarker(ctx, `${command.dir}/burst1`)) !== undefined) return true;
      throw new ConformanceFailure(`the background command ${id} is ${info === undefined ? 'no longer listed' : 'listed as ended'} before it finished burst 1, though nothing ended it (commands() lists ${await listedIds(calls)})`);
    },
    within,
    `the background command never finished burst 1 (it creates ${command.dir}/burst1 after it)`,
  );
}

/** Creates the trigger: the command writes burst 2 and ends. */
export async function trigger(ctx: CaseContext, command: BurstCommand): Promise<void> {
  const result = await ctx.exec(['sh', '-c', ': > "$1/trigger"', 'sh', command.dir]);
  check(result.exitCode === 0, `a helper creating ${command.dir}/trigger failed (exit ${result.exitCode}): ${result.stderrText.trim()}`);
}

/** How many times the command started: the lines of its start counter. */
export async function startCount(ctx: CaseContext, command: BurstCommand): Promise<number> {
  return ((await readMarker(ctx, `${command.dir}/starts`)) ?? '').split('\n').filter((line) => line === 'start').length;
}

/** The exact end the command chose, for comparing with a result. */
export function checkEnding(result: ExecResult, ending: Ending, what: string): void {
  const expected = ending === 'term' ? { exitCode: null, signal: 'SIGTERM' } : { exitCode: ending, signal: null };
  check(
    result.exitCode === expected.exitCode && result.signal === expected.signal,
    `${what}: the result says exit ${result.exitCode}, signal ${result.signal}; expected exit ${expected.exitCode}, signal ${expected.signal}`,
  );
}

/** A Process's chunks, each awaited with {@link nextChunk}. */
export type Chunks = AsyncIterator<OutputChunk, undefined>;

/** How long a Process may deliver nothing more once its command wrote all that is awaited: seconds, scaled by the backend's latency. */
const STALL_MS = 5_000;

/**
 * The next chunk of `iterator`, or its end. While the command has not created `marker` it may
 * still be writing, and only the case's limit applies; once it has, the adapter holds all that is
 * awaited, and a Process that delivers nothing more within a bound fails at once, instead of
 * costing the case's whole limit.
 */
export async function nextChunk(ctx: CaseContext, iterator: Chunks, marker: string, what: string): Promise<IteratorResult<OutputChunk, undefined>> {
  const pending = iterator.next();
  let outcome = await settledWithin(pending, 50);
  while (outcome === 'pending') {
    if ((await readMarker(ctx, marker)) !== undefined) break;
    outcome = await settledWithin(pending, 100);
  }
  if (outcome === 'pending') {
    const within = await bound(ctx, STALL_MS);
    outcome = await settledWithin(pending, within);
    if (outcome === 'pending') {
      const ended = await ctx.endMarked();
      throw new ConformanceFailure(
        `${what}: nothing more arrived within ${within} ms, though the command had written it (it created ${marker})` +
          (ended.length === 0 ? '' : `; the kit then ended the case's processes (pid ${ended.join(', ')})`),
      );
    }
  }
  if (outcome.rejected) throw outcome.reason;
  return outcome.value;
}

/** The rest of a Process's output, per stream, to its end; bounded as {@link nextChunk} once the command created its `ending` marker. */
export async function readRest(ctx: CaseContext, iterator: Chunks, command: BurstCommand, what: string): Promise<Record<StreamName, Uint8Array>> {
  const parts: Record<StreamName, Buffer[]> = { stdout: [], stderr: [] };
  for (;;) {
    const next = await nextChunk(ctx, iterator, `${command.dir}/ending`, what);
    if (next.done === true) break;
    parts[next.value.stream].push(Buffer.from(next.value.data));
  }
  return { stdout: new Uint8Array(Buffer.concat(parts.stdout)), stderr: new Uint8Array(Buffer.concat(parts.stderr)) };
}

/** Reads a Process chunk by chunk, so a case can stop at a point and read on later; bounded as {@link nextChunk}. */
export class Reader {
  readonly #iterator: Chunks;
  readonly parts: Record<StreamName, Buffer[]> = { stdout: [], stderr: [] };
  readonly counts: Record<StreamName, number> = { stdout: 0, stderr: 0 };
  constructor(
    private readonly ctx: CaseContext,
    proc: BackgroundProcess,
    private readonly command: BurstCommand,
  ) {
    this.#iterator = proc[Symbol.asyncIterator]();
  }
  /** Reads until `done` holds, a part of burst 1; fails if the Process ends first. */
  async until(done: () => boolean, what: string): Promise<void> {
    while (!done()) {
      const next = await nextChunk(this.ctx, this.#iterator, `${this.command.dir}/burst1`, what);
      if (next.done === true) throw new ConformanceFailure(`${what}: the Process ended after ${this.counts.stdout} bytes of stdout and ${this.counts.stderr} of stderr`);
      this.parts[next.value.stream].push(Buffer.from(next.value.data));
      this.counts[next.value.stream] += next.value.data.byteLength;
    }
  }
  /** What was read so far, per stream. */
  read(): Record<StreamName, Buffer> {
    return { stdout: Buffer.concat(this.parts.stdout), stderr: Buffer.concat(this.parts.stderr) };
  }
  /** All it delivered, from the first byte read, to its end. */
  async rest(what = 'the rest of the Process'): Promise<Record<StreamName, Uint8Array>> {
    const after = await readRest(this.ctx, this.#iterator, this.command, what);
    const before = this.read();
    return { stdout: new Uint8Array(Buffer.concat([before.stdout, after.stdout])), stderr: new Uint8Array(Buffer.concat([before.stderr, after.stderr])) };
  }
}

/** Everything an attached Process delivered, per stream (see {@link readRest}). */
export function drain(ctx: CaseContext, proc: BackgroundProcess, command: BurstCommand, what: string): Promise<Record<StreamName, Uint8Array>> {
  return readRest(ctx, proc[Symbol.asyncIterator](), command, what);
}

/** What a replay must be: the manifest's mode, `follow` for `{ replay: false }`. */
export type ReplayMode = 'full' | 'tail' | 'none' | 'follow';

/** The mode of a default attach on this sandbox, as its manifest declares. */
export function declaredReplay(sandbox: Sandbox): ReplayMode {
  if (hasCapability(sandbox.capabilities, 'replay-full')) return 'full';
  if (hasCapability(sandbox.capabilities, 'replay-tail')) return 'tail';
  return 'none';
}

/** Where delivered bytes start in the stream, read off the first block header in them: for failure messages. */
function located(delivered: Uint8Array, letter: string): string {
  const text = Buffer.from(delivered.subarray(0, 2 * BLOCK)).toString('latin1');
  const match = new RegExp(`${letter}([0-9]{7})`).exec(text);
  if (match === null) return delivered.byteLength === 0 ? 'nothing was delivered' : 'no block header in the first bytes delivered';
  return `the first bytes delivered are those at offset ${Number(match[1]) * BLOCK - match.index} of the stream`;
}

/**
 * Checks D = T[s..] for one stream (ADR-0036) and the bound on s the mode
 * sets. `written` is how many bytes of T were written before the attach
 * (burst 1, or all of T for an ended command).
 */
export function checkReplay(
  stream: StreamName,
  delivered: Uint8Array,
  skipped: Readonly<Record<StreamName, number>> | undefined,
  command: BurstCommand,
  mode: ReplayMode,
  written: number,
  what: string,
): void {
  const whole = command.expected[stream];
  const s = skipped?.[stream];
  const where = `${what}, ${stream}`;
  if (s !== undefined) {
    check(Number.isSafeInteger(s) && s >= 0 && s <= whole.byteLength, `${where}: skipped is ${s}, expected a byte count from 0 to ${whole.byteLength}`);
  }
  if (mode === 'full') check(s === 0, `${where}: under replay-full skipped must be 0, got ${s}`);
  if (mode === 'tail') {
    const most = Math.max(0, written - TAIL_PROMISE);
    check(s !== undefined, `${where}: under replay-tail skipped must count the bytes not replayed, got undefined`);
    check(s <= most, `${where}: skipped is ${s}, but replay-tail keeps at least the last ${TAIL_PROMISE} of the ${written} bytes written before the attach, so at most ${most}`);
  }
  if (mode === 'follow' && s !== undefined) check(s === written, `${where}: with { replay: false } skipped must be the ${written} bytes written before the attach, got ${s}`);
  // Without a count, the bytes are a run that ends where the stream ends and holds all written after the attach.
  const from = s ?? (mode === 'follow' ? written : whole.byteLength - delivered.byteLength);
  if (s === undefined && (from < 0 || from > written)) {
    throw new ConformanceFailure(`${where}: ${delivered.byteLength} bytes delivered, skipped undefined; expected the last ${whole.byteLength - written} to ${whole.byteLength} bytes of the stream (${located(delivered, stream === 'stdout' ? 'o' : 'e')})`);
  }
  const expected = whole.subarray(from);
  if (Buffer.compare(delivered, expected) === 0) return;
  const n = Math.min(delivered.byteLength, expected.byteLength);
  let at = 0;
  while (at < n && delivered[at] === expected[at]) at++;
  throw new ConformanceFailure(
    `${where}: delivered ${delivered.byteLength} bytes with skipped ${s}; expected the ${expected.byteLength} bytes of the stream from offset ${from}, ` +
      `every byte once and in order: they differ at delivered byte ${at} (${located(delivered, stream === 'stdout' ? 'o' : 'e')})`,
  );
}

/** Disposes every Process given, ignoring failures: cleanup after a failed check. */
export async function disposeAll(procs: ReadonlyArray<BackgroundProcess | undefined>): Promise<void> {
  await Promise.allSettled(procs.map((proc) => proc?.[Symbol.asyncDispose]()));
}
