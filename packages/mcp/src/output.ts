// The output of a result, sized for a model's context window: the text of one
// result stays within a budget of characters, and output past it is cut in
// the middle, keeping its head (how the command started: the command line it
// echoed, the first error) and its tail (how it ended: the summary, the last
// error), with a marker line that says what was left out and how to read it.
import type { StreamName } from '@sandstream/types';

/**
 * The default budget of one result's text, in characters: 30 000, about
 * 8 000 tokens, a small share of a model's context window, so that a few
 * large outputs do not crowd out the conversation.
 */
export const DEFAULT_OUTPUT_BUDGET = 30_000;

/** The smallest budget accepted: room for the status line, two markers and some output. */
export const MIN_OUTPUT_BUDGET = 2_000;

/** What a cut left out of one stream. */
export interface Omitted {
  /** Bytes of the stream not in the text (for a terminal's text, of the text, as UTF-8). */
  readonly bytes: number;
  /** Lines (newlines) of the stream not in the text. */
  readonly lines: number;
}

const NEWLINE = 0x0a;

function newlinesIn(data: Uint8Array): number {
  const buffer = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  let count = 0;
  for (let at = buffer.indexOf(NEWLINE); at !== -1; at = buffer.indexOf(NEWLINE, at + 1)) count++;
  return count;
}

const countLines = (text: string): number => text.split('\n').length - 1;

/**
 * One stream's bytes as a command writes them, in bounded memory: the first
 * `limit` bytes, the last `limit` bytes after those, and the count of all of
 * them (bytes and newlines). With `limit` at the budget, the head and the
 * tail each hold more than a result can show.
 */
export class HeadTail {
  readonly #head: Uint8Array[] = [];
  #headSize = 0;
  readonly #tail: Uint8Array[] = [];
  #tailSize = 0;
  /** Bytes written in all. */
  bytes = 0;
  /** Newlines written in all. */
  lines = 0;

  constructor(readonly limit: number) {}

  add(data: Uint8Array): void {
    this.bytes += data.byteLength;
    this.lines += newlinesIn(data);
    let rest = data;
    if (this.#headSize < this.limit) {
      const taken = Math.min(this.limit - this.#headSize, rest.byteLength);
      // A copy: a view would pin the whole chunk it came from.
      this.#head.push(rest.slice(0, taken));
      this.#headSize += taken;
      rest = rest.subarray(taken);
    }
    if (rest.byteLength === 0) return;
    this.#tail.push(rest);
    this.#tailSize += rest.byteLength;
    while (this.#tailSize - this.#tail[0]!.byteLength >= this.limit) this.#tailSize -= this.#tail.shift()!.byteLength;
    const over = this.#tailSize - this.limit;
    if (over > 0) {
      this.#tail[0] = this.#tail[0]!.slice(over);
      this.#tailSize -= over;
    }
  }

  /** The kept text: all of it when nothing was dropped between head and tail, else the two apart. */
  text(): { readonly whole: string } | { readonly head: string; readonly tail: string } {
    const decode = (parts: Uint8Array[]): string => new TextDecoder('utf-8', { ignoreBOM: true }).decode(Buffer.concat(parts));
    if (this.#headSize + this.#tailSize === this.bytes) return { whole: decode([...this.#head, ...this.#tail]) };
    return { head: decode(this.#head), tail: decode(this.#tail) };
  }
}

/** One stream of a result, cut or whole. */
export interface StreamOutput {
  readonly stream: StreamName;
  /** The whole text, or the head and tail of a longer one (see {@link HeadTail.text}). */
  readonly text: { readonly whole: string } | { readonly head: string; readonly tail: string };
  /** Bytes and newlines of the whole stream. */
  readonly bytes: number;
  readonly lines: number;
}

/** A stream's text as a result shows it. */
export interface Section {
  readonly text: string;
  readonly omitted: Omitted;
}

/** At most `chars` of the start of `text`, ended at a line's end where one is in the second half. */
function headOf(text: string, chars: number): string {
  if (text.length <= chars) return text;
  const cut = text.lastIndexOf('\n', chars - 1);
  return cut >= chars / 2 ? text.slice(0, cut + 1) : text.slice(0, chars);
}

/** At most `chars` of the end of `text`, started at a line's start where one is in the first half. */
function tailOf(text: string, chars: number, startsALine: boolean): string {
  const from = Math.max(0, text.length - chars);
  if (from === 0 && startsALine) return text;
  if (from > 0 && text[from - 1] === '\n') return text.slice(from);
  const cut = text.indexOf('\n', from);
  return cut !== -1 && cut + 1 - from <= chars / 2 ? text.slice(cut + 1) : text.slice(from);
}

/**
 * The marker that stands for what a cut left out. `howToReadAll` says where
 * the whole output can be read, for the tool that made the cut.
 */
export function marker(stream: StreamName, omitted: Omitted, howToReadAll: string): string {
  const number = (n: number): string => n.toLocaleString('en-US');
  return `[... ${number(omitted.lines)} lines (${number(omitted.bytes)} bytes) of ${stream} left out here. ${howToReadAll} ...]\n`;
}

/**
 * The section of one stream within `chars` characters: its whole text, or
 * its head and its tail around a marker line (whose length is over `chars`:
 * the caller keeps room for it, {@link MARKER_ROOM}).
 */
export function section(output: StreamOutput, chars: number, howToReadAll: string): Section {
  const text = output.text;
  if ('whole' in text && text.whole.length <= chars) return { text: text.whole, omitted: { bytes: 0, lines: 0 } };
  const head = headOf('whole' in text ? text.whole : text.head, Math.ceil(chars / 2));
  // A tail that was cut from a longer stream starts inside a line (and maybe inside a character).
  const tail = 'whole' in text ? tailOf(text.whole.slice(head.length), Math.floor(chars / 2), head.endsWith('\n')) : tailOf(text.tail, Math.floor(chars / 2), false);
  const omitted: Omitted = {
    bytes: Math.max(0, output.bytes - Buffer.byteLength(head) - Buffer.byteLength(tail)),
    lines: Math.max(0, output.lines - countLines(head) - countLines(tail)),
  };
  const joint = head === '' || head.endsWith('\n') ? '' : '\n';
  return { text: `${head}${joint}${marker(output.stream, omitted, howToReadAll)}${tail}`, omitted };
}

/** Characters kept for a marker line and the section's tags. */
export const MARKER_ROOM = 500;

/** How long a stream's text would be whole, or Infinity when it is longer than was kept. */
const wholeLength = (output: StreamOutput): number => ('whole' in output.text ? output.text.whole.length : Number.POSITIVE_INFINITY);

/**
 * The sections of the non-empty streams within `chars` characters in all:
 * whole when they fit; otherwise a stream that fits in half keeps all of its
 * text and the other gets the rest, or each gets half.
 */
export function sections(outputs: readonly StreamOutput[], chars: number, howToReadAll: string): Section[] {
  const present = outputs.filter((output) => !('whole' in output.text) || output.text.whole !== '');
  const lengths = present.map(wholeLength);
  if (lengths.reduce((a, b) => a + b, 0) + present.length * 40 <= chars) return present.map((output) => section(output, chars, howToReadAll));
  const room = Math.max(0, chars - present.length * MARKER_ROOM);
  const shares = present.length === 1 ? [room] : lengths.map((length, i) => (length <= room / 2 ? length : lengths[1 - i]! <= room / 2 ? room - lengths[1 - i]! : room / 2));
  return present.map((output, i) => section(output, Math.floor(shares[i]!), howToReadAll));
}

/**
 * A stream's section between tags. The closing tag follows the text as it
 * is: on a line of its own after a newline, right after a last line without
 * one (a prompt), so the text is exactly the output.
 */
export function tagged(stream: StreamName, text: string): string {
  return `<${stream}>\n${text}</${stream}>`;
}

/** Nothing left out. */
export const NOTHING_OMITTED: Omitted = Object.freeze({ bytes: 0, lines: 0 });

const EMPTY: Section = { text: '', omitted: NOTHING_OMITTED };

/**
 * A result's text within `budget` characters: the status line, then each
 * stream that wrote something between tags, cut to fit; `sections` says what
 * each cut left out.
 */
export function composeText(status: string, outputs: readonly StreamOutput[], budget: number, howToReadAll: string): { text: string; sections: Record<StreamName, Section> } {
  const shown = sections(outputs, budget - status.length - 64, howToReadAll);
  const byStream: Record<StreamName, Section> = { stdout: EMPTY, stderr: EMPTY };
  const present = outputs.filter((output) => !('whole' in output.text) || output.text.whole !== '');
  present.forEach((output, i) => (byStream[output.stream] = shown[i]!));
  const body = present.map((output, i) => tagged(output.stream, shown[i]!.text));
  return { text: [status, ...(body.length === 0 ? ['(no output)'] : body)].join('\n'), sections: byStream };
}


