/**
 * A kit message cut down to one line that is the same from run to run:
 * what the case saw, without the parts that name this run (pids, scratch
 * paths, measured times, sizes of random data) and without the kit's notes
 * on its own cleanup.
 */

/** The longest line kept, in characters, before the ellipsis. */
export const MAX_SAW = 150;

/** Where the kit appends what it did after the case, or further errors of the same case: cut there. */
const TAILS = ['; then, while disposing', ' (after the case,', ' [grace period'];

/**
 * Errors that go on to quote the whole command line, the kit's random
 * arguments included (envd's failed start): cut after these words.
 */
const QUOTES_COMMAND_LINE = ['error starting process'];

/**
 * `pid 123 (a child of the command: sh -c ...)` becomes `a child of the
 * command`. The kit shows at most 120 characters of the command line, ending
 * in `...` when it cut it; an uncut one may hold parentheses, so its end is
 * the first `)` that a separator follows.
 */
function withoutPids(text: string): string {
  let out = '';
  let rest = text;
  for (let match = /pid \d+ \(/.exec(rest); match !== null; match = /pid \d+ \(/.exec(rest)) {
    out += rest.slice(0, match.index);
    const open = match.index + match[0].length;
    const colon = rest.indexOf(': ', open);
    const close = rest.indexOf(')', open);
    if (close === -1) return out + rest.slice(match.index);
    if (colon === -1 || colon > close) {
      // `pid 123 (its child)`: no command line.
      out += rest.slice(open, close);
      rest = rest.slice(close + 1);
      continue;
    }
    out += rest.slice(open, colon);
    const shown = colon + 2;
    const cut = rest.startsWith('...)', shown + 117) ? shown + 120 : endOfUncut(rest, shown);
    rest = rest.slice(cut + 1);
  }
  return out + rest;
}

function endOfUncut(text: string, from: number): number {
  for (let at = text.indexOf(')', from); at !== -1; at = text.indexOf(')', at + 1)) {
    const next = text.slice(at + 1);
    if (next === '' || /^(, pid |,? still running|;| \()/.test(next)) return at;
  }
  return text.length - 1;
}

/** One line of what the case saw, from its message. */
export function shorten(message: string): string {
  let text = message.replace(/\s+/g, ' ').trim();
  for (const tail of TAILS) {
    const at = text.indexOf(tail);
    if (at > 0) text = text.slice(0, at);
  }
  for (const words of QUOTES_COMMAND_LINE) {
    const at = text.indexOf(words);
    if (at !== -1 && at + words.length < text.length) text = `${text.slice(0, at + words.length)} …`;
  }
  text = withoutPids(text)
    // Scratch directories of the run.
    .replace(/\/tmp\/[\w.\-/]+/g, '<tmp>')
    // Where random test data first differs, measured times and sizes, and pids outside a
    // description: their digits change from run to run.
    .replace(/\boffset \d+/g, 'offset N')
    // A pid the kit names without a description: a container's own pids are short.
    .replace(/\bpid \d+/g, 'pid N')
    .replace(/\d+\.\d+/g, 'N')
    .replace(/\d{4,}/g, 'N');
  // Random test data (the kit's generated text) starts at the first character outside printable ASCII.
  const foreign = text.search(/[^\x20-\x7e]/);
  if (foreign !== -1) text = `${text.slice(0, foreign).trimEnd()} …`;
  if (text.length > MAX_SAW) {
    const space = text.lastIndexOf(' ', MAX_SAW);
    text = `${text.slice(0, space > MAX_SAW / 2 ? space : MAX_SAW)} …`;
  }
  return text;
}
