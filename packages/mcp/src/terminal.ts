// Terminals for the tools (spec 1.5, capability `pty`): the size argument,
// the named keys a model can send, and the text a model reads in place of
// the terminal's raw bytes.
import { z } from 'zod';
import type { TerminalSize } from '@sandstream/types';

/**
 * The size of `pty: true`: 120 columns, 40 rows. Programs format to the
 * width (ps, top and git cut lines at it; progress bars and tables fill it),
 * and 80 columns cut more than a model can afford to lose, while each line a
 * full-screen program redraws costs context: 120 x 40 is the size of a
 * common terminal window, wide enough not to truncate, small enough to stay
 * cheap.
 */
export const DEFAULT_TERMINAL: TerminalSize = Object.freeze({ cols: 120, rows: 40 });

const dimension = (what: string) => z.number().int().min(1).max(65535).describe(what);

/** `cols` and `rows` of a terminal, as the contract bounds them (the kernel's unsigned shorts). */
export const terminalSizeSchema = z.object({ cols: dimension('Columns (1 to 65535).'), rows: dimension('Rows (1 to 65535).') }).strict();

/** The `pty` argument of `exec` and `start`: `true` for the default size, or a size; `false` is no terminal. */
export const ptyArgumentSchema = z
  .union([z.boolean(), terminalSizeSchema])
  .describe(
    `Run the command on a pseudo-terminal, for programs that need one: true (${DEFAULT_TERMINAL.cols} columns, ${DEFAULT_TERMINAL.rows} rows) or { cols, rows }; false or absent: no terminal. ` +
      'Standard output and error become one stream; the output is returned as text with escape sequences removed and CR LF as LF (raw: true gives the bytes as they came).',
  );

/** The size a `pty` argument asks for; undefined for no terminal (`false` or absent). */
export function terminalSize(pty: boolean | TerminalSize | undefined): TerminalSize | undefined {
  if (pty === undefined || pty === false) return undefined;
  return pty === true ? DEFAULT_TERMINAL : { cols: pty.cols, rows: pty.rows };
}

const CSI = '\x1b[';
const ctrl = Object.fromEntries(
  [...'abcdefghijklmnopqrstuvwxyz'].map((letter, i) => [`ctrl-${letter}`, String.fromCharCode(i + 1)]),
) as Record<`ctrl-${string}`, string>;

/**
 * The named keys of the `write` tool's `keys`, and the bytes each types: what
 * an xterm sends in its default (normal cursor key) mode, which readline,
 * curses programs and shells all accept.
 */
export const KEYS: Readonly<Record<string, string>> = Object.freeze({
  enter: '\r',
  tab: '\t',
  space: ' ',
  backspace: '\x7f',
  escape: '\x1b',
  up: `${CSI}A`,
  down: `${CSI}B`,
  right: `${CSI}C`,
  left: `${CSI}D`,
  home: `${CSI}H`,
  end: `${CSI}F`,
  insert: `${CSI}2~`,
  delete: `${CSI}3~`,
  'page-up': `${CSI}5~`,
  'page-down': `${CSI}6~`,
  f1: '\x1bOP',
  f2: '\x1bOQ',
  f3: '\x1bOR',
  f4: '\x1bOS',
  f5: `${CSI}15~`,
  f6: `${CSI}17~`,
  f7: `${CSI}18~`,
  f8: `${CSI}19~`,
  f9: `${CSI}20~`,
  f10: `${CSI}21~`,
  f11: `${CSI}23~`,
  f12: `${CSI}24~`,
  ...ctrl,
  'ctrl-@': '\x00',
  'ctrl-[': '\x1b',
  'ctrl-\\': '\x1c',
  'ctrl-]': '\x1d',
  'ctrl-^': '\x1e',
  'ctrl-_': '\x1f',
});

export const KEY_NAMES = Object.keys(KEYS) as [string, ...string[]];

/** The bytes of a list of named keys. */
export function keyBytes(keys: readonly string[]): string {
  return keys.map((key) => KEYS[key]!).join('');
}

type State = 'text' | 'esc' | 'esc-intermediate' | 'csi' | 'string' | 'string-esc';

/**
 * A terminal's output as text a model can read, fed in pieces. Escape
 * sequences (CSI, OSC, DCS and the rest) are removed; CR LF is LF; a bare CR
 * returns to the start of the line and what follows overwrites it (a progress
 * bar leaves its last state), backspace moves back one cell, and the line
 * editing sequences shells use (erase in line, cursor left and right, delete
 * and insert characters) are applied to the current line. Other control
 * characters are dropped. It models one line, not a screen: a full-screen
 * program's cursor movements between rows are dropped, not rendered.
 */
export class TerminalText {
  /** Finished lines not yet taken. */
  #done = '';
  #cells: string[] = [];
  #col = 0;
  /** The part of the current line a take already returned. */
  #shown = '';
  #state: State = 'text';
  #params = '';

  /** Feeds decoded output. */
  write(text: string): void {
    for (const ch of text) this.#char(ch);
  }

  /** The text since the last take: finished lines, and the current line so far. */
  take(): string {
    const line = this.#line();
    const out = this.#done + this.#since(line);
    this.#done = '';
    this.#shown = line;
    return out;
  }

  /** The whole of a terminal's output, as text. */
  static of(text: string): string {
    const terminal = new TerminalText();
    terminal.write(text);
    return terminal.take();
  }

  #line(): string {
    return Array.from(this.#cells, (cell) => cell ?? ' ').join('');
  }

  /** The current line, less what a take already gave; a line redrawn since is given again, whole, on a line of its own. */
  #since(line: string): string {
    if (line.startsWith(this.#shown)) return line.slice(this.#shown.length);
    return `\n${line}`;
  }

  #newline(): void {
    this.#done += `${this.#since(this.#line())}\n`;
    this.#cells = [];
    this.#col = 0;
    this.#shown = '';
  }

  #put(ch: string): void {
    while (this.#cells.length < this.#col) this.#cells.push(' ');
    this.#cells[this.#col++] = ch;
  }

  #char(ch: string): void {
    const code = ch.codePointAt(0)!;
    switch (this.#state) {
      case 'esc':
        if (ch === '[') {
          this.#state = 'csi';
          this.#params = '';
        } else if (ch === ']' || ch === 'P' || ch === 'X' || ch === '^' || ch === '_') this.#state = 'string';
        else if (code >= 0x20 && code <= 0x2f) this.#state = 'esc-intermediate';
        else if (code < 0x20) this.#control(ch);
        else this.#state = 'text';
        return;
      case 'esc-intermediate':
        if (code >= 0x30 && code <= 0x7e) this.#state = 'text';
        else if (code < 0x20 || code > 0x7e) this.#control(ch);
        return;
      case 'csi':
        if (code >= 0x20 && code <= 0x3f) this.#params += ch;
        else if (code >= 0x40 && code <= 0x7e) {
          this.#state = 'text';
          this.#csi(ch, this.#params);
        } else this.#control(ch);
        return;
      case 'string':
        // OSC, DCS, SOS, PM, APC: to BEL or ESC \ (ST).
        if (ch === '\x07') this.#state = 'text';
        else if (ch === '\x1b') this.#state = 'string-esc';
        return;
      case 'string-esc':
        this.#state = ch === '\\' ? 'text' : 'string';
        return;
      case 'text':
        if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) this.#control(ch);
        else this.#put(ch);
    }
  }

  /** A control character, in text or where it interrupts a sequence (a terminal executes it there). */
  #control(ch: string): void {
    switch (ch) {
      case '\n':
        this.#state = 'text';
        this.#newline();
        return;
      case '\r':
        this.#col = 0;
        return;
      case '\b':
        this.#col = Math.max(0, this.#col - 1);
        return;
      case '\t':
        this.#put('\t');
        return;
      case '\x1b':
        this.#state = 'esc';
        return;
      case '\x18':
      case '\x1a':
        // CAN and SUB abort a sequence.
        this.#state = 'text';
        return;
      default:
      // BEL, NUL, DEL, C1 and the rest: dropped.
    }
  }

  #csi(final: string, params: string): void {
    if (/[<=>?]/.test(params)) return; // private modes (bracketed paste, cursor visibility, ...)
    const n = Math.max(1, Number.parseInt(params, 10) || 1);
    const mode = Number.parseInt(params, 10) || 0;
    switch (final) {
      case 'K': // erase in line
        if (mode === 0) this.#cells.length = Math.min(this.#cells.length, this.#col);
        else if (mode === 1) for (let i = 0; i <= this.#col && i < this.#cells.length; i++) this.#cells[i] = ' ';
        else if (mode === 2) this.#cells = [];
        return;
      case 'C': // cursor forward
        this.#col += n;
        return;
      case 'D': // cursor back
        this.#col = Math.max(0, this.#col - n);
        return;
      case 'G': // cursor to column
        this.#col = n - 1;
        return;
      case 'P': // delete characters
        this.#cells.splice(this.#col, n);
        return;
      case '@': // insert blanks
        if (this.#col < this.#cells.length) this.#cells.splice(this.#col, 0, ...' '.repeat(n));
        return;
      case 'X': // erase characters
        for (let i = this.#col; i < this.#col + n && i < this.#cells.length; i++) this.#cells[i] = ' ';
        return;
      default:
      // colours (m), cursor rows, scrolling, erase in display: no text of their own.
    }
  }
}
