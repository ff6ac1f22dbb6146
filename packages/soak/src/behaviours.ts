/**
 * What a soak command does. Each behaviour is a `sh -c` script plus the exact
 * bytes it writes to each stream, computed here in JavaScript from the same
 * parameters, so what a consumer reads can be compared byte for byte.
 *
 * Scripts use only POSIX sh, printf, awk, cat, wc and sleep (as on any
 * sandbox image), and quote every parameter; the alphabets leave out the
 * characters that would need escaping (`'`, `\`, `%`).
 */
import type { TerminalSize } from '@sandstream/types';
import type { Rng } from './random.js';

/** The behaviours a soak command can have. */
export const BEHAVIOURS = [
  'much-output',
  'slow-output',
  'binary-output',
  'ignores-sigterm',
  'forks-children',
  'reads-stdin',
  'exit-code',
  'on-terminal',
] as const;
export type BehaviourName = (typeof BEHAVIOURS)[number];

/** How a command ends on its own: an exit code, or a signal it sends itself. */
export type PlannedEnd = { readonly exitCode: number; readonly signal: null } | { readonly exitCode: null; readonly signal: 'SIGUSR1' };

/** One planned command. */
export interface CommandPlan {
  readonly behaviour: BehaviourName;
  /** The `sh -c` script. */
  readonly script: string;
  /** Bytes to send through standard input, then end-of-file; undefined when the command gets none. */
  readonly stdin: Uint8Array | undefined;
  /** How the command ends when nothing ends it first (ignored when it lingers). */
  readonly end: PlannedEnd;
  /** After its output it sleeps for minutes: only the consumer's ending stops it. */
  readonly lingers: boolean;
  /**
   * What arrives of its output when it is ended early is a prefix of
   * {@link expected}. Not so for a command whose output depends on how much of
   * its input arrived (`wc -c`).
   */
  readonly prefixWhenEnded: boolean;
  /**
   * Spec 1.5: the command runs on a terminal of this size, where all it
   * writes arrives as `stdout` through the line discipline (`\n` as CR LF).
   */
  readonly pty?: TerminalSize;
  /** Sizes and counts that describe it, for the plan digest and for reports. */
  readonly parameters: Readonly<Record<string, number | string>>;
  /** The exact bytes it writes to each stream before it ends or lingers. */
  expected(): { readonly stdout: Uint8Array; readonly stderr: Uint8Array };
}

/** What a behaviour may use. */
export interface BehaviourContext {
  /** The adapter delivers arbitrary bytes (`binary-output`); otherwise all output is valid UTF-8. */
  readonly binary: boolean;
  /** Whether the command should outlive its output (only for endings that stop it). */
  readonly lingers: boolean;
}

const encoder = new TextEncoder();
const EMPTY = new Uint8Array(0);

/** Printable ASCII without `'`, `\` and `%`, plus multi-byte characters of every UTF-8 length. */
const TEXT = [
  ...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 !#$&()*+,-./:;<=>?@[]^_{|}~"`',
  'é',
  'ß',
  '€',
  '中',
  '😀',
  '𝄞',
];

/** A lingering command sleeps this long: far past any bound of the run, so only its ending stops it. */
const LINGER = 'sleep 600';

function quote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

function pad7(n: number): string {
  return String(n).padStart(7, '0');
}

function tail(context: BehaviourContext, end: PlannedEnd): string {
  if (context.lingers) return LINGER;
  return end.signal === 'SIGUSR1' ? 'kill -USR1 $$; sleep 600' : `exit ${end.exitCode}`;
}

/**
 * Exit codes stay within 0-128: the Vercel API reports one number for the
 * exit, and its adapter reads 129-192 as death by signal (a documented limit
 * of that API), so a higher code would be a planned mismatch there.
 */
function plannedEnd(rng: Rng, selfSignal = 0.05): PlannedEnd {
  if (rng.chance(selfSignal)) return { exitCode: null, signal: 'SIGUSR1' };
  return { exitCode: rng.chance(0.4) ? 0 : rng.int(1, 128), signal: null };
}

/** Lines of text on stdout (a marker line on stderr every few): 32 KiB to 1 MiB, past any pipe buffer. */
function muchOutput(rng: Rng, context: BehaviourContext): CommandPlan {
  const prefix = rng.text(rng.int(8, 120), TEXT);
  const lineBytes = encoder.encode(prefix).byteLength + 8;
  const lines = Math.max(1, Math.ceil(rng.logInt(32 * 1024, 1024 * 1024) / lineBytes));
  const every = rng.int(1, 200);
  const end = plannedEnd(rng);
  const awk = `BEGIN { for (i = 0; i < ${lines}; i++) { printf "%s%07d\\n", p, i; if (i % ${every} == 0) printf "e%07d\\n", i > "/dev/stderr" } }`;
  return {
    behaviour: 'much-output',
    script: `awk -v p=${quote(prefix)} ${quote(awk)}; ${tail(context, end)}`,
    stdin: undefined,
    end,
    lingers: context.lingers,
    prefixWhenEnded: true,
    parameters: { lines, lineBytes, every },
    expected() {
      const out: string[] = [];
      const err: string[] = [];
      for (let i = 0; i < lines; i++) {
        out.push(`${prefix}${pad7(i)}\n`);
        if (i % every === 0) err.push(`e${pad7(i)}\n`);
      }
      return { stdout: encoder.encode(out.join('')), stderr: encoder.encode(err.join('')) };
    },
  };
}

/** A few lines with pauses between them, on both streams. */
function slowOutput(rng: Rng, context: BehaviourContext): CommandPlan {
  const count = rng.int(2, 25);
  const pauseMs = rng.int(5, 60);
  const word = rng.text(rng.int(1, 40), TEXT);
  const toStderr = rng.int(0, 3);
  const end = plannedEnd(rng);
  const seconds = (pauseMs / 1000).toFixed(3);
  const script =
    `i=0; while [ $i -lt ${count} ]; do ` +
    `if [ $((i % 4)) -eq ${toStderr} ]; then printf '%s %d\\n' ${quote(word)} $i >&2; else printf '%s %d\\n' ${quote(word)} $i; fi; ` +
    `sleep ${seconds}; i=$((i + 1)); done; ${tail(context, end)}`;
  return {
    behaviour: 'slow-output',
    script,
    stdin: undefined,
    end,
    lingers: context.lingers,
    prefixWhenEnded: true,
    parameters: { count, pauseMs },
    expected() {
      let stdout = '';
      let stderr = '';
      for (let i = 0; i < count; i++) {
        if (i % 4 === toStderr) stderr += `${word} ${i}\n`;
        else stdout += `${word} ${i}\n`;
      }
      return { stdout: encoder.encode(stdout), stderr: encoder.encode(stderr) };
    },
  };
}

/** Every byte value, invalid UTF-8 included: a random block repeated, on stdout (a short block on stderr). */
function binaryOutput(rng: Rng, context: BehaviourContext): CommandPlan {
  const block = rng.bytes(rng.int(16, 512));
  const repeats = rng.logInt(1, 2_000);
  const errBlock = rng.bytes(rng.int(1, 64));
  const end = plannedEnd(rng);
  const octal = (bytes: Uint8Array): string => [...bytes].map((b) => `\\${b.toString(8).padStart(3, '0')}`).join('');
  const script =
    `i=0; while [ $i -lt ${repeats} ]; do printf '${octal(block)}'; i=$((i + 1)); done; ` +
    `printf '${octal(errBlock)}' >&2; ${tail(context, end)}`;
  return {
    behaviour: 'binary-output',
    script,
    stdin: undefined,
    end,
    lingers: context.lingers,
    prefixWhenEnded: true,
    parameters: { block: block.byteLength, repeats },
    expected() {
      const stdout = new Uint8Array(block.byteLength * repeats);
      for (let i = 0; i < repeats; i++) stdout.set(block, i * block.byteLength);
      return { stdout, stderr: errBlock };
    },
  };
}

/** Ignores SIGTERM (its children inherit that), so only SIGKILL ends it early. */
function ignoresSigterm(rng: Rng, context: BehaviourContext): CommandPlan {
  const word = rng.text(rng.int(1, 40), TEXT);
  const pauseMs = rng.int(0, 100);
  const end = plannedEnd(rng, 0);
  const script =
    `trap '' TERM; printf 'ignoring TERM %s\\n' ${quote(word)}; sleep ${(pauseMs / 1000).toFixed(3)}; ` +
    `printf 'still here\\n' >&2; ${tail(context, end)}`;
  return {
    behaviour: 'ignores-sigterm',
    script,
    stdin: undefined,
    end,
    lingers: context.lingers,
    prefixWhenEnded: true,
    parameters: { pauseMs },
    expected: () => ({ stdout: encoder.encode(`ignoring TERM ${word}\n`), stderr: encoder.encode('still here\n') }),
  };
}

/**
 * Starts silent background children that outlive the leader: a sleeper on
 * the inherited pipes, one that ignores SIGTERM, a shell with its own child,
 * one detached from the pipes. However the command ends, they must go too.
 */
function forksChildren(rng: Rng, context: BehaviourContext): CommandPlan {
  const children = [
    'sleep 600 &',
    "(trap '' TERM; sleep 600) &",
    "sh -c 'sleep 600 & wait' &",
    'sleep 600 </dev/null >/dev/null 2>&1 &',
  ];
  const chosen = children.filter(() => rng.chance(0.6));
  if (chosen.length === 0) chosen.push(rng.pick(children));
  const word = rng.text(rng.int(1, 40), TEXT);
  const end = plannedEnd(rng);
  const script = `${chosen.join(' ')} printf 'forked %s\\n' ${quote(word)}; ${tail(context, end)}`;
  return {
    behaviour: 'forks-children',
    script,
    stdin: undefined,
    end,
    lingers: context.lingers,
    prefixWhenEnded: true,
    parameters: { children: chosen.length },
    expected: () => ({ stdout: encoder.encode(`forked ${word}\n`), stderr: EMPTY }),
  };
}

/** Reads standard input to its end: echoes it (`cat`) or counts it (`wc -c`). */
function readsStdin(rng: Rng, context: BehaviourContext): CommandPlan {
  const size = rng.chance(0.1) ? 0 : rng.logInt(1, 256 * 1024);
  const data = context.binary ? rng.bytes(size) : encoder.encode(rng.text(size, TEXT)).subarray(0, size);
  // A cut inside a multi-byte character would not be valid UTF-8: trim to whole characters.
  const input = context.binary ? data : wholeCharacters(data);
  const echo = rng.chance(0.7);
  const end = plannedEnd(rng, 0);
  const script = `${echo ? 'cat' : 'wc -c'}; ${tail(context, end)}`;
  return {
    behaviour: 'reads-stdin',
    script,
    stdin: input,
    end,
    lingers: context.lingers,
    prefixWhenEnded: echo,
    parameters: { size: input.byteLength, echo: echo ? 'cat' : 'wc' },
    expected: () => ({ stdout: echo ? input : encoder.encode(`${input.byteLength}\n`), stderr: EMPTY }),
  };
}

function wholeCharacters(bytes: Uint8Array): Uint8Array {
  let end = bytes.byteLength;
  // Step back over continuation bytes to the last lead byte; keep it only if its character is complete.
  let start = end;
  while (start > 0 && (bytes[start - 1]! & 0xc0) === 0x80) start--;
  if (start > 0) {
    const lead = bytes[start - 1]!;
    const length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
    if (end - (start - 1) < length) end = start - 1;
  }
  return bytes.subarray(0, end);
}

/** A line on each stream, then a random exit code (or a signal it sends itself). */
function exitCode(rng: Rng, context: BehaviourContext): CommandPlan {
  const end = plannedEnd(rng, 0.15);
  const word = rng.text(rng.int(0, 30), TEXT);
  const script = `printf 'ending %s\\n' ${quote(word)}; printf 'bye\\n' >&2; ${tail(context, end)}`;
  return {
    behaviour: 'exit-code',
    script,
    stdin: undefined,
    end,
    lingers: context.lingers,
    prefixWhenEnded: true,
    parameters: { exitCode: end.exitCode ?? end.signal },
    expected: () => ({ stdout: encoder.encode(`ending ${word}\n`), stderr: encoder.encode('bye\n') }),
  };
}

/**
 * On a terminal (spec 1.5, only where the adapter has `pty`): checks that it
 * is on one, writes lines to standard output and error in turn (one stream
 * on a terminal, in the order written, each newline as CR LF), maybe
 * ignoring SIGHUP and maybe leaving a job in a process group of its own
 * (job control): teardown must end the terminal's whole session.
 */
function onTerminal(rng: Rng, context: BehaviourContext): CommandPlan {
  const lines = rng.int(1, 400);
  const every = rng.int(1, 50);
  const pause = rng.chance(0.3) ? rng.pick(['0.01', '0.02']) : undefined;
  const ignoresHangUp = rng.chance(0.5);
  const job = rng.chance(0.4);
  const end = plannedEnd(rng);
  const pty = { cols: rng.int(20, 300), rows: rng.int(5, 100) };
  const body = `printf 'line-%s\\n' "$i"; if [ $((i % ${every})) -eq 0 ]; then printf 'err-%s\\n' "$i" >&2; fi${pause === undefined ? '' : `; sleep ${pause}`}`;
  const script = [
    '[ -t 0 ] && [ -t 1 ] && [ -t 2 ] || { echo "not on a terminal"; exit 99; }',
    ...(ignoresHangUp ? ["trap '' HUP"] : []),
    ...(job ? ['set -m 2>/dev/null', 'sleep 600 &', 'set +m 2>/dev/null'] : []),
    `i=0; while [ "$i" -lt ${lines} ]; do ${body}; i=$((i + 1)); done`,
    tail(context, end),
  ].join('\n');
  return {
    behaviour: 'on-terminal',
    script,
    stdin: undefined,
    end,
    lingers: context.lingers,
    prefixWhenEnded: true,
    pty,
    parameters: { lines, every, pause: pause ?? 'none', ignoresHangUp: String(ignoresHangUp), job: String(job), cols: pty.cols, rows: pty.rows },
    expected() {
      const out: string[] = [];
      for (let i = 0; i < lines; i++) {
        out.push(`line-${i}\r\n`);
        if (i % every === 0) out.push(`err-${i}\r\n`);
      }
      return { stdout: encoder.encode(out.join('')), stderr: EMPTY };
    },
  };
}

const BUILDERS: Readonly<Record<BehaviourName, (rng: Rng, context: BehaviourContext) => CommandPlan>> = {
  'much-output': muchOutput,
  'slow-output': slowOutput,
  'binary-output': binaryOutput,
  'ignores-sigterm': ignoresSigterm,
  'forks-children': forksChildren,
  'reads-stdin': readsStdin,
  'exit-code': exitCode,
  'on-terminal': onTerminal,
};

/** Plans one command of the given behaviour. */
export function planCommand(behaviour: BehaviourName, rng: Rng, context: BehaviourContext): CommandPlan {
  return BUILDERS[behaviour](rng, context);
}

/** A command for the companions of a sandbox that is closed: silent, lingering, with children of its own. */
export function companionScript(rng: Rng): string {
  return rng.pick([LINGER, `sleep 600 & ${LINGER}`, `trap '' TERM; ${LINGER}`]);
}
