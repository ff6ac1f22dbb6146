// The file methods of a SandboxSession, as shell commands in the sandbox:
// every adapter can run commands, none has to offer a file API.
import type {
  Experimental_SandboxDirectoryEntry as SandboxDirectoryEntry,
  Experimental_SandboxFileStat as SandboxFileStat,
  Experimental_SandboxSession as SandboxSession,
} from '@ai-sdk/provider-utils';
import { CapabilityNotSupported, hasCapability, InvalidArgument, type ExecResult, type Process, type RunOptions, type Sandbox, type StreamOptions } from '@sandstream/types';

/** The sandbox with the session's base directory applied. */
export interface CommandRunner {
  readonly sandbox: Sandbox;
  run(argv: readonly string[], options?: RunOptions): Promise<ExecResult>;
  stream(argv: readonly string[], options?: StreamOptions): Process;
}

// Exit statuses the scripts below use to say what the interface distinguishes;
// chosen away from those of `cat`, `rm` and `sh` (1, 2, 126, 127).
const NOT_FOUND = 44;
const IS_DIRECTORY = 21;
const NOT_DIRECTORY = 20;

// Each script gets the path as $1 (`sh -c SCRIPT sh PATH`), never spliced into the text.
const READ = `[ -d "$1" ] && exit ${IS_DIRECTORY}; [ -e "$1" ] || exit ${NOT_FOUND}; exec cat -- "$1"`;
const WRITE = `[ -d "$1" ] && exit ${IS_DIRECTORY}; mkdir -p -- "$(dirname -- "$1")" && exec cat > "$1"`;
const STAT =
  `[ -e "$1" ] || exit ${NOT_FOUND}; ` +
  `if [ -d "$1" ]; then echo directory 0; elif [ -f "$1" ]; then echo file $(wc -c < "$1"); else echo other 0; fi`;
// NUL-separated `type/name` entries: a name may hold any byte but NUL and `/`.
const LIST =
  `[ -e "$1" ] || exit ${NOT_FOUND}; [ -d "$1" ] || exit ${NOT_DIRECTORY}; cd -- "$1" || exit 1; ` +
  `for f in .* *; do case $f in .|..) continue;; esac; [ -e "$f" ] || [ -L "$f" ] || continue; ` +
  `if [ -L "$f" ]; then t=symlink; elif [ -d "$f" ]; then t=directory; elif [ -f "$f" ]; then t=file; else t=other; fi; ` +
  `printf '%s/%s\\0' "$t" "$f"; done`;
const DELETE = `[ -L "$1" ] && exec rm -f -- "$1"; [ -e "$1" ] || exit ${NOT_FOUND}; [ -d "$1" ] && exit ${IS_DIRECTORY}; exec rm -f -- "$1"`;

function script(text: string, path: string): string[] {
  if (typeof path !== 'string' || path === '') throw new InvalidArgument('path', 'path must be a non-empty string');
  return ['sh', '-c', text, 'sh', path];
}

function failed(what: string, path: string, result: ExecResult): Error {
  if (result.exitCode === IS_DIRECTORY) return new Error(`${what} ${path}: is a directory`);
  if (result.exitCode === NOT_DIRECTORY) return new Error(`${what} ${path}: not a directory`);
  const how = result.signal !== null ? `killed by ${result.signal}` : `exit code ${result.exitCode}`;
  return new Error(`${what} ${path}: ${how}${result.stderrText === '' ? '' : `: ${result.stderrText.trim()}`}`);
}

function encoder(encoding: string | undefined): InstanceType<typeof TextEncoder> {
  // TextEncoder writes UTF-8 only; another encoding would be written wrong, so it is refused.
  if (encoding !== undefined && !/^utf-?8$/i.test(encoding)) throw new InvalidArgument('encoding', `only utf-8 can be written, not ${encoding}`);
  return new TextEncoder();
}

/** Lines `start`..`end` (1-based, inclusive) of `text`, each with its newline. */
function lineRange(text: string, start = 1, end = Number.POSITIVE_INFINITY): string {
  if (start === 1 && end === Number.POSITIVE_INFINITY) return text;
  const lines = text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
  return lines.slice(Math.max(0, start - 1), end).join('');
}

type Files = Pick<
  SandboxSession,
  'readFile' | 'readBinaryFile' | 'readTextFile' | 'writeFile' | 'writeBinaryFile' | 'writeTextFile' | 'stat' | 'listDirectory' | 'deleteFile'
>;

/** The file methods over `runner`; `maxFileBytes` bounds what a read keeps. */
export function sessionFiles(runner: CommandRunner, maxFileBytes: number): Files {
  const signalOf = (signal: AbortSignal | undefined): { signal?: AbortSignal } => (signal === undefined ? {} : { signal });
  const needStdin = (): void => {
    if (!hasCapability(runner.sandbox.capabilities, 'stdin')) {
      throw new CapabilityNotSupported('stdin', 'writing a file through the shell');
    }
  };

  async function readBinaryFile({ path, abortSignal }: { path: string; abortSignal?: AbortSignal }): Promise<Uint8Array | null> {
    const result = await runner.run(script(READ, path), { maxOutputBytes: maxFileBytes, ...signalOf(abortSignal) });
    if (result.exitCode === NOT_FOUND) return null;
    if (result.exitCode !== 0) throw failed('reading', path, result);
    if (result.stdoutTruncated) throw new Error(`reading ${path}: larger than ${maxFileBytes} bytes`);
    return result.stdout;
  }

  async function writeBinaryFile({ path, content, abortSignal }: { path: string; content: Uint8Array; abortSignal?: AbortSignal }): Promise<void> {
    needStdin();
    const result = await runner.run(script(WRITE, path), { input: content, ...signalOf(abortSignal) });
    if (result.exitCode !== 0) throw failed('writing', path, result);
  }

  return {
    readBinaryFile,
    async readFile(options) {
      const bytes = await readBinaryFile(options);
      if (bytes === null) return null;
      return new ReadableStream<Uint8Array>({
        start(controller) {
          if (bytes.byteLength > 0) controller.enqueue(bytes);
          controller.close();
        },
      });
    },
    async readTextFile({ encoding, startLine, endLine, ...options }) {
      const bytes = await readBinaryFile(options);
      if (bytes === null) return null;
      return lineRange(new TextDecoder(encoding ?? 'utf-8').decode(bytes), startLine, endLine);
    },
    writeBinaryFile,
    async writeTextFile({ encoding, content, ...options }) {
      await writeBinaryFile({ ...options, content: encoder(encoding).encode(content) });
    },
    async writeFile({ path, content, abortSignal }) {
      needStdin();
      // Streamed through the command's stdin as it is read, never held whole.
      await using proc = runner.stream(script(WRITE, path), { stdin: 'pipe', ...signalOf(abortSignal) });
      for await (const chunk of content as unknown as AsyncIterable<Uint8Array>) await proc.stdin!.write(chunk);
      await proc.stdin!.end();
      const result = await proc.wait();
      if (result.exitCode !== 0) throw failed('writing', path, { ...result, stderrText: '' });
    },
    async stat({ path, abortSignal }): Promise<SandboxFileStat | null> {
      const result = await runner.run(script(STAT, path), signalOf(abortSignal));
      if (result.exitCode === NOT_FOUND) return null;
      if (result.exitCode !== 0) throw failed('stat', path, result);
      const [type, size] = result.stdoutText.trim().split(/\s+/);
      return { type: type as SandboxFileStat['type'], size: Number(size) };
    },
    async listDirectory({ path, abortSignal }): Promise<SandboxDirectoryEntry[] | null> {
      const result = await runner.run(script(LIST, path), { maxOutputBytes: maxFileBytes, ...signalOf(abortSignal) });
      if (result.exitCode === NOT_FOUND) return null;
      if (result.exitCode !== 0) throw failed('listing', path, result);
      return result.stdoutText
        .split('\0')
        .filter((entry) => entry !== '')
        .map((entry) => {
          const slash = entry.indexOf('/');
          return { type: entry.slice(0, slash) as SandboxDirectoryEntry['type'], name: entry.slice(slash + 1) };
        });
    },
    async deleteFile({ path, abortSignal }) {
      const result = await runner.run(script(DELETE, path), signalOf(abortSignal));
      if (result.exitCode === NOT_FOUND) return false;
      if (result.exitCode !== 0) throw failed('deleting', path, result);
      return true;
    },
  };
}
