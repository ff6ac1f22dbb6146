/**
 * How a start request becomes one SSH `exec`. SSH carries no argv, no
 * environment an unconfigured server accepts, and no working directory: one
 * command string, which sshd hands to the account's login shell (`$SHELL -c`).
 * So the words are quoted for that shell, the variables exported and the
 * directory entered by the string itself.
 *
 * Two forms:
 * - **inline**: the whole start in the string, each word in single quotes
 *   (exact for every character but NUL in a POSIX shell);
 * - **staged through standard input**, for a start too large for the request
 *   (OpenSSH drops the connection on an exec request over 256 KiB): a first
 *   channel stores the same script in a file of mode 0600 from its standard
 *   input, and the start's channel sources it, removing it first. The
 *   command's own standard input is then untouched.
 *
 * Either form first writes a mark to standard output and to standard error:
 * what the account's startup files print before it (a `.bashrc` that talks)
 * is the server's, not the command's, and {@link PreludeFilter} drops it.
 * A working directory that does not exist is a refusal mark instead, so the
 * start is `refused` before anything ran.
 */

/** The mark on both streams once the shell runs the start string, after the account's startup files. */
export const READY_MARK = '\x1esandstream-ssh:ready\n';

/** The mark on standard error (instead of {@link READY_MARK}) when the working directory cannot be entered. */
export const NO_DIRECTORY_MARK = '\x1esandstream-ssh:no-directory\n';

/** What the upload of a staged start writes once the script is stored. */
export const STORED_MARK = 'sandstream-ssh:stored\n';

/** The exit status of a start refused by the bootstrap (no directory, a cut payload). */
export const REFUSED_STATUS = 125;

/** Start strings longer than this go through standard input (OpenSSH's limit is 256 KiB for the whole request). */
export const INLINE_LIMIT = 64 * 1024;

/** One word for a POSIX shell, exactly: in single quotes, each quote closed, escaped and reopened. */
export function quote(word: string): string {
  return `'${word.replaceAll("'", "'\\''")}'`;
}

/** A name a shell's `export` can set. Others reach the command through `env(1)` in the launch's argv. */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** What a start needs of a `StartRequest`. */
export interface StartWords {
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string | undefined;
  /**
   * Whether the command reads the channel's input. When not, its standard input is `/dev/null`
   * and the channel's input is never ended: OpenSSH closes a channel whose input ended and whose
   * output did as soon as it sees both, and a process that has not been reaped by then has its
   * exit status dropped (under load, often).
   */
  readonly stdin: boolean;
}

/** printf formats of the marks (octal escapes, which every printf has). */
const printfOf = (mark: string): string => mark.replace('\x1e', '\\036').replace('\n', '\\n');

/** Enters `cwd` and writes the marks, or writes the refusal and exits. */
function enter(cwd: string | undefined, dir: string): string {
  const ready = `printf '${printfOf(READY_MARK)}'; printf '${printfOf(READY_MARK)}' >&2`;
  if (cwd === undefined) return `${ready}; `;
  return `if cd -- ${dir} 2>/dev/null; then ${ready}; else printf '${printfOf(NO_DIRECTORY_MARK)}' >&2; exit ${REFUSED_STATUS}; fi; `;
}

/**
 * The exec strings of a start. `staged` is set for a start too large for one exec request: the
 * script `upload` (run first, with `script` on its standard input) stores at `path`, and `command`
 * then sources and removes.
 */
export interface StartLine {
  readonly command: string;
  readonly staged: { readonly path: string; readonly upload: string; readonly script: Uint8Array } | undefined;
}

/**
 * The exec string of a start: inline when it fits {@link INLINE_LIMIT}, else staged through a
 * file at `${stageBase}${id}` (mode 0600) that the start removes as it begins.
 *
 * @example
 * ```ts
 * import { startLine } from '@sandstream/adapter-ssh';
 * const { command, staged } = startLine({ argv: ['printf', '%s', "it's"], env: { A: '1' }, cwd: '/tmp', stdin: false }, 'c1');
 * // command: "if cd -- '/tmp' ...; export A='1'; exec 'printf' '%s' 'it'\''s'", staged: undefined
 * ```
 */
export function startLine(start: StartWords, id: string, stageBase = '/tmp/.sandstream-start-'): StartLine {
  const exports = Object.entries(start.env)
    .filter(([name]) => IDENTIFIER.test(name))
    .map(([name, value]) => `export ${name}=${quote(value)}; `)
    .join('');
  const input = start.stdin ? '' : 'exec </dev/null; ';
  const inline = `${input}${enter(start.cwd, quote(start.cwd ?? ''))}${exports}exec ${start.argv.map(quote).join(' ')}`;
  if (inline.length <= INLINE_LIMIT) return { command: inline, staged: undefined };
  const path = quote(`${stageBase}${id}`);
  return {
    // Sourced, so the start runs in the login shell as inline; removed before anything else.
    command: `. ${path}`,
    // The upload's success is its mark, not its exit status (which the race above may drop).
    staged: { path: `${stageBase}${id}`, upload: `umask 077 && cat > ${path} && printf '${printfOf(STORED_MARK)}'`, script: new TextEncoder().encode(`rm -f -- ${path}\n${inline}\n`) },
  };
}

/**
 * Cuts what the server printed before the start's mark out of one stream
 * (both streams have one). Bytes before the mark are kept as `noise`, for
 * the message of a start that never reached its mark; the mark itself goes
 * nowhere; everything after it passes through untouched.
 */
export class PreludeFilter {
  #seen: Buffer = Buffer.alloc(0);
  #through = false;
  /** The refusal mark came instead of the ready mark (standard error only). */
  refused = false;

  /** Whether the mark has passed. */
  get through(): boolean {
    return this.#through;
  }

  /** What the server printed before the mark (bounded), for messages. */
  get noise(): string {
    return this.#seen.subarray(0, 4096).toString('utf8').trim();
  }

  /** The bytes of `chunk` that belong to the command (possibly none). */
  push(chunk: Buffer): Buffer | undefined {
    if (this.#through) return chunk;
    this.#seen = Buffer.concat([this.#seen, chunk]);
    for (const [mark, refusal] of [[READY_MARK, false], [NO_DIRECTORY_MARK, true]] as const) {
      const at = this.#seen.indexOf(mark);
      if (at === -1) continue;
      this.#through = true;
      this.refused = refusal;
      const rest = this.#seen.subarray(at + Buffer.byteLength(mark));
      this.#seen = this.#seen.subarray(0, at);
      return rest.byteLength === 0 ? undefined : rest;
    }
    return undefined;
  }
}
