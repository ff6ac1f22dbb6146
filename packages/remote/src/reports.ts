/**
 * The supervisor's in-band reports (ADR-0033), and the splitter that cuts
 * them out of the standard error a backend delivers.
 *
 * A report is a frame `\x1esandstream:<id> <body>\n` on the supervisor's
 * standard error, which is also the command's. The command's bytes pass
 * through untouched around the frames: removing every frame gives back
 * exactly what the command wrote. A frame can stand anywhere in the stream
 * (a process that left the tree may write after the last one), so the
 * splitter looks for the frame mark at every byte, holding back only a tail
 * that could be the start of one.
 */

/** The command started: its identity. */
export interface StartReport {
  readonly type: 'start';
  /** The command's pid, which is also its session and process group. */
  readonly pid: number;
  /** The command's process group (the pid). */
  readonly pgid: number;
  /**
   * The command's start time in clock ticks since boot (field 22 of
   * `/proc/<pid>/stat`): with the pid, it tells the command from a later
   * process that took the same number once the supervisor is gone.
   */
  readonly startTime: string;
  /** Whether the command received SIGINT and SIGQUIT at their default disposition or ignored (no GNU `env --default-signal` in the sandbox). */
  readonly interrupt: 'default' | 'ignored';
}

/** The command could not be started; the supervisor exits 127 without starting anything. */
export interface NoExecReport {
  readonly type: 'noexec';
  /** `ENOENT`, `EACCES`, or `ENOENT <tool>` when the sandbox lacks a tool the supervisor needs. */
  readonly reason: string;
}

/** How the command ended, from its wait status. */
export type ExitStatus =
  | { readonly kind: 'code'; readonly code: number }
  | { readonly kind: 'signal'; readonly number: number; readonly signal: string; readonly core: boolean }
  /** The status could not be read (the command was reaped by another process). */
  | { readonly kind: 'unknown' };

/** The command (the leader) ended; members of its tree may still run. */
export interface ExitReport {
  readonly type: 'exit';
  readonly status: ExitStatus;
}

/**
 * After `exit`: the supervisor's first look found live processes of the
 * command's group or session, so `gone` waits for them (the driver's
 * `leaderExited`). Absent when the tree was gone at once.
 */
export interface HeldReport {
  readonly type: 'held';
}

/** No live process of the command's group or session is left; the supervisor exits next. */
export interface GoneReport {
  readonly type: 'gone';
}

/**
 * Spec 1.4: the owner lease lapsed (no renewal within its lapse time on the
 * sandbox's clock), and the supervisor began the termination sequence on
 * its own. Any time after `start`, at most once.
 */
export interface LostReport {
  readonly type: 'lost';
}

export type SupervisorReport = StartReport | NoExecReport | ExitReport | HeldReport | GoneReport | LostReport;

/** A frame with the command's mark that does not parse: the stream is not what the supervisor wrote. */
export class SupervisorReportError extends Error {
  override readonly name = 'SupervisorReportError';
  /** The frame as received (latin1, so every byte shows). */
  readonly frame: string;
  constructor(message: string, frame: string) {
    super(`${message}: ${JSON.stringify(frame)}`);
    this.frame = frame;
  }
}

/** A frame's body is at most this long; the supervisor's are under 100 bytes. */
const MAX_BODY = 512;
const NUMBER = /^(0|[1-9][0-9]{0,9})$/;

/** The report a frame's body (the text after `<id> `) holds. */
export function parseReport(body: string): SupervisorReport {
  const words = body.split(' ');
  const n = (word: string | undefined): number => {
    if (word === undefined || !NUMBER.test(word)) throw new SupervisorReportError('bad number in report', body);
    return Number(word);
  };
  switch (words[0]) {
    case 'start': {
      const [, pid, pgid, startTime, interrupt] = words;
      if (words.length !== 5 || startTime === undefined || !NUMBER.test(startTime) || (interrupt !== 'default' && interrupt !== 'ignored')) {
        throw new SupervisorReportError('bad start report', body);
      }
      return { type: 'start', pid: n(pid), pgid: n(pgid), startTime, interrupt };
    }
    case 'noexec':
      if (words.length < 2 || words[1] === '') throw new SupervisorReportError('bad noexec report', body);
      return { type: 'noexec', reason: words.slice(1).join(' ') };
    case 'exit':
      if (words[1] === 'code' && words.length === 3) {
        const code = n(words[2]);
        if (code > 255) throw new SupervisorReportError('exit code out of range', body);
        return { type: 'exit', status: { kind: 'code', code } };
      }
      if (words[1] === 'signal' && (words.length === 4 || (words.length === 5 && words[4] === 'core'))) {
        const number = n(words[2]);
        const name = words[3] ?? '';
        if (number < 1 || number > 127 || !/^[A-Z0-9+-]+$/.test(name)) throw new SupervisorReportError('bad signal in report', body);
        return { type: 'exit', status: { kind: 'signal', number, signal: `SIG${name}`, core: words.length === 5 } };
      }
      if (words[1] === 'unknown' && words.length === 2) return { type: 'exit', status: { kind: 'unknown' } };
      throw new SupervisorReportError('bad exit report', body);
    case 'held':
      if (words.length !== 1) throw new SupervisorReportError('bad held report', body);
      return { type: 'held' };
    case 'gone':
      if (words.length !== 1) throw new SupervisorReportError('bad gone report', body);
      return { type: 'gone' };
    case 'lost':
      if (words.length !== 1) throw new SupervisorReportError('bad lost report', body);
      return { type: 'lost' };
    default:
      throw new SupervisorReportError('unknown report', body);
  }
}

/** What one {@link ReportSplitter.push} or {@link ReportSplitter.end} yields. */
export interface SplitResult {
  /** The command's own bytes, in order, with the frames cut out. */
  readonly output: Uint8Array;
  readonly reports: SupervisorReport[];
}

/**
 * Cuts the reports of the supervisor with the given id out of a standard
 * error stream, chunk by chunk, however the transport split it.
 *
 * @example
 * ```ts
 * import { ReportSplitter } from '@sandstream/remote';
 *
 * const splitter = new ReportSplitter('0123456789abcdef');
 * const { output, reports } = splitter.push(new TextEncoder().encode('oops\n\u001esandstream:0123456789abcdef gone\n'));
 * // output: the bytes of 'oops\n'; reports: [{ type: 'gone' }]
 * ```
 */
export class ReportSplitter {
  readonly #mark: Uint8Array;
  #held: Uint8Array = new Uint8Array(0);

  constructor(id: string) {
    this.#mark = new TextEncoder().encode(`\u001esandstream:${id} `);
  }

  /** Takes the next chunk; a frame cut between chunks is held until its end arrives. */
  push(chunk: Uint8Array): SplitResult {
    const data = this.#held.length === 0 ? chunk : Buffer.concat([this.#held, chunk]);
    this.#held = new Uint8Array(0);
    return this.#split(data, false);
  }

  /** The stream ended: whatever was held is the command's, unless it is a frame without its end. */
  end(): SplitResult {
    const data = this.#held;
    this.#held = new Uint8Array(0);
    return this.#split(data, true);
  }

  #split(data: Uint8Array, final: boolean): SplitResult {
    const mark = this.#mark;
    const parts: Uint8Array[] = [];
    const reports: SupervisorReport[] = [];
    let from = 0;
    let i = data.indexOf(0x1e);
    while (i !== -1) {
      const whole = Math.min(mark.length, data.length - i);
      if (!startsWith(data, i, mark, whole)) {
        i = data.indexOf(0x1e, i + 1);
        continue;
      }
      if (whole < mark.length) {
        // The tail could be a frame's beginning: hold it, unless nothing more comes.
        if (final) break;
        parts.push(data.subarray(from, i));
        this.#held = data.slice(i);
        return { output: Buffer.concat(parts), reports };
      }
      const start = i + mark.length;
      const newline = data.indexOf(0x0a, start);
      const frame = (to: number): string => Buffer.from(data.subarray(i, to)).toString('latin1');
      if (newline === -1 || newline - start > MAX_BODY) {
        if (newline === -1 && data.length - start <= MAX_BODY && !final) {
          parts.push(data.subarray(from, i));
          this.#held = data.slice(i);
          return { output: Buffer.concat(parts), reports };
        }
        throw new SupervisorReportError(final ? 'report frame without its end' : 'report frame too long', frame(Math.min(data.length, start + MAX_BODY)));
      }
      parts.push(data.subarray(from, i));
      reports.push(parseReport(Buffer.from(data.subarray(start, newline)).toString('latin1')));
      from = newline + 1;
      i = data.indexOf(0x1e, from);
    }
    parts.push(data.subarray(from));
    return { output: Buffer.concat(parts), reports };
  }
}

function startsWith(data: Uint8Array, at: number, prefix: Uint8Array, length: number): boolean {
  for (let k = 0; k < length; k++) if (data[at + k] !== prefix[k]) return false;
  return true;
}
