// The echo command every fuzz case runs, and the parsing of what it printed.

const encoder = new TextEncoder();

/**
 * `sh -c ECHO sh args...`: `$0` and its arguments NUL-terminated, its own initial
 * environment (as exec'd, before the shell touched anything), its
 * physical working directory and what it reads on standard input, each as
 * `od` hex, separated by `@` lines.
 */
export const ECHO = 'printf "%s\\0" "$0" "$@" | od -An -v -tx1; echo @; od -An -v -tx1 < /proc/$$/environ; echo @; pwd -P | od -An -v -tx1; echo @; od -An -v -tx1';

/** Bytes as lowercase hex. */
export function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

/** What the command must see of a string: its UTF-8 encoding, each lone surrogate as U+FFFD. */
export function utf8Hex(text: string): string {
  return hex(encoder.encode(text));
}

/** What the echo printed: argv, environment (hex name to hex values), working directory and standard input, each as hex. */
export interface Echo {
  readonly args: string[];
  readonly env: Map<string, Array<string | undefined>>;
  readonly cwd: string;
  readonly stdin: string;
}

/** The echo's output parsed; undefined when it is not the echo's. */
export function parseEcho(stdout: string): Echo | undefined {
  const sections = stdout.split('@\n');
  if (sections.length !== 4) return undefined;
  const [argvHex = '', environHex = '', cwdHex = '', stdinHex = ''] = sections.map((section) => section.replace(/\s+/g, ''));
  // $0 comes first, so that no arguments and one empty argument differ.
  const args = argvHex.split(/(?<=^(?:..)*)00/).slice(1, -1);
  const environ = Buffer.from(environHex, 'hex');
  const env = new Map<string, Array<string | undefined>>();
  let start = 0;
  for (let index = 0; index <= environ.length; index++) {
    if (index < environ.length && environ[index] !== 0) continue;
    if (index > start) {
      const entry = environ.subarray(start, index);
      const equals = entry.indexOf(0x3d, 1);
      const name = hex(equals < 0 ? entry : entry.subarray(0, equals));
      const list = env.get(name) ?? [];
      list.push(equals < 0 ? undefined : hex(entry.subarray(equals + 1)));
      env.set(name, list);
    }
    start = index + 1;
  }
  return { args, env, cwd: cwdHex, stdin: stdinHex };
}

