/**
 * Pseudo-terminals opened safely through a `node-pty`-compatible library
 * (ADR-0053): what adapter-local's terminals and the E2B emulator's share.
 * The library only allocates (`open()`) and resizes; whoever starts the
 * command gives it {@link PtyDevice.slaveFd} as its standard streams.
 *
 * Never call the library terminal's `destroy()` or `kill()`: an `open()`
 * terminal has pid -1, and both end in `process.kill(-1, 'SIGHUP')`, a
 * signal to every process this one may signal. Descriptors are closed here,
 * by hand.
 *
 * @packageDocumentation
 */
import { closeSync, constants, openSync, readdirSync, readlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Readable } from 'node:stream';

/**
 * What is used of a pseudo-terminal library: the `open()` of `node-pty`
 * (and of its prebuilt fork `@lydell/node-pty`), whose result is a terminal
 * with no process. Only `fd`, `ptsName`, `master`, `slave` and `resize()`
 * of that result are used.
 *
 * @example
 * ```ts
 * import { createRequire } from 'node:module';
 * import type { LocalPtyModule } from '@sandstream/adapter-local/pty';
 * const module = createRequire(import.meta.url)('node-pty') as LocalPtyModule;
 * ```
 */
export interface LocalPtyModule {
  /**
   * Allocates a pseudo-terminal of this size with no process on it, its
   * streams yielding Buffers (`encoding: null`). Its `destroy()` and
   * `kill()` are never called.
   */
  open(options: { cols: number; rows: number; encoding: null }): unknown;
}

/** The outcome of looking for the library: the module, or why there is none. */
export type PtySupport = { readonly module: LocalPtyModule } | { readonly unavailable: string };

/** The pinned library (an optional dependency: a platform without its prebuild has none). */
const LIBRARY = '@lydell/node-pty';

/**
 * The terminal library: `given` when the caller passed one, else the
 * optional dependency, loaded now. Never throws: a library that cannot load
 * leaves the caller without terminals, and says why.
 *
 * @example
 * ```ts
 * import { loadPtySupport } from '@sandstream/adapter-local/pty';
 * const found = loadPtySupport(undefined);
 * console.log('unavailable' in found ? found.unavailable : 'terminals available');
 * ```
 */
export function loadPtySupport(given: unknown): PtySupport {
  let module: unknown = given;
  if (module === undefined) {
    try {
      module = createRequire(import.meta.url)(LIBRARY);
    } catch (error) {
      return { unavailable: `${LIBRARY} could not be loaded: ${(error as Error).message}` };
    }
  }
  if (typeof (module as Partial<LocalPtyModule> | null)?.open !== 'function') {
    return { unavailable: `the terminal library has no open() function` };
  }
  return { module: module as LocalPtyModule };
}

/** A terminal just opened: its master as a stream, and a blocking slave descriptor of its own. */
export interface PtyDevice {
  /** The master's descriptor, owned by {@link PtyDevice.master}: destroying the stream closes it. */
  readonly masterFd: number;
  /** A `tty.ReadStream` on the master, yielding Buffers. */
  readonly master: Readable;
  /** The slave's path, `/dev/pts/N`. */
  readonly ptsName: string;
  /** The slave, opened blocking (the library's is not), as a command's standard streams want it. */
  readonly slaveFd: number;
  /** TIOCSWINSZ on the terminal. */
  resize(cols: number, rows: number): void;
}

/** The parts of an `open()` terminal used here (never `destroy()` nor `kill()`). */
interface OpenedTerminal {
  readonly fd: number;
  readonly ptsName: string;
  readonly master: Readable;
  /** A `tty.ReadStream` on the slave, which this process must not read. */
  readonly slave: Readable;
  resize(cols: number, rows: number): void;
}

/**
 * The masters this process holds open. The library does not mark them
 * close-on-exec, so every child would inherit them (and a master held by
 * another process keeps its terminal from hanging up): see {@link shieldMasters}.
 */
const openMasters = new Set<number>();

/**
 * Opens a terminal of this size. The library's slave stream is destroyed
 * before it reads (it would take the command's input), and the descriptor
 * libuv leaves open when it reopens the slave is closed, or the master
 * would never read its end. The master counts as open until
 * {@link forgetMaster}. Throws what the library throws (out of terminals,
 * of descriptors).
 *
 * @example
 * ```ts
 * import { loadPtySupport, openPtyDevice } from '@sandstream/adapter-local/pty';
 * const found = loadPtySupport(undefined);
 * if ('module' in found) {
 *   const device = openPtyDevice(found.module, 80, 24);
 *   console.log(device.ptsName); // "/dev/pts/3"
 * }
 * ```
 */
export function openPtyDevice(module: LocalPtyModule, cols: number, rows: number): PtyDevice {
  const terminal = module.open({ cols, rows, encoding: null }) as OpenedTerminal;
  openMasters.add(terminal.fd);
  try {
    const reopened = (terminal.slave as unknown as { _handle?: { fd?: number } })._handle?.fd;
    terminal.slave.destroy();
    closeOtherDescriptors(terminal.ptsName, reopened);
    const slaveFd = openSync(terminal.ptsName, constants.O_RDWR | constants.O_NOCTTY);
    return { masterFd: terminal.fd, master: terminal.master, ptsName: terminal.ptsName, slaveFd, resize: (c, r) => terminal.resize(c, r) };
  } catch (error) {
    openMasters.delete(terminal.fd);
    if (!terminal.master.destroyed) terminal.master.destroy();
    throw error;
  }
}

/** The master `fd` is closed: children need no shield from it any more. */
export function forgetMaster(fd: number): void {
  openMasters.delete(fd);
}

/**
 * `stdio` for `child_process.spawn`, extended so that no master of this
 * process reaches the child: each descriptor number a master has is given
 * `replacement` instead (the child's own slave, or /dev/null).
 */
export function shieldMasters<T>(stdio: ReadonlyArray<T | number | 'ignore'>, replacement: number): Array<T | number | 'ignore'> {
  const shielded = [...stdio];
  for (const master of openMasters) {
    while (shielded.length <= master) shielded.push('ignore');
    shielded[master] = replacement;
  }
  return shielded;
}

/** Closes `fd`, which may be closed already. */
export function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Closed already.
  }
}

/** Closes this process's descriptors on `path` other than `keep` (which its stream closes). */
function closeOtherDescriptors(path: string, keep: number | undefined): void {
  for (const entry of readdirSync('/proc/self/fd')) {
    const fd = Number(entry);
    if (fd === keep || fd < 3) continue;
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${entry}`);
    } catch {
      continue;
    }
    if (target === path) closeQuietly(fd);
  }
}
