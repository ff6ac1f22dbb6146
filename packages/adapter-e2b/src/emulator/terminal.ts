/**
 * The emulator's pseudo-terminals, for Start requests with `pty` (envd:
 * creack/pty's `StartWithSize`). The terminal library `@lydell/node-pty`
 * (an optional dependency, the one adapter-local uses: ADR-0053) only
 * opens and resizes the terminal; the command is spawned by
 * `child_process` through `setsid --ctty`, with the slave as its standard
 * streams, so it leads a session whose controlling terminal this is.
 *
 * Never call the library terminal's `destroy()` or `kill()`: an `open()`
 * terminal has pid -1, and both end in `process.kill(-1, 'SIGHUP')`, a
 * signal to every process this one may signal. Descriptors are closed here.
 */
import { execFileSync } from 'node:child_process';
import { constants, openSync, readSync, write } from 'node:fs';
import type { Readable } from 'node:stream';
import { closeQuietly, forgetMaster, loadPtySupport, openPtyDevice, shieldMasters as shieldMastersWith, type LocalPtyModule, type PtyDevice } from '@sandstream/adapter-local/pty';

let support: { readonly library: LocalPtyModule } | { readonly unavailable: string } | undefined;

/** The terminal library (adapter-local's, ADR-0053), or why the emulator has no terminals here (checked once). */
function terminalSupport(): { readonly library: LocalPtyModule } | { readonly unavailable: string } {
  if (support !== undefined) return support;
  const found = loadPtySupport(undefined);
  if ('unavailable' in found) return (support = found);
  try {
    execFileSync('setsid', ['--version'], { stdio: 'ignore' });
  } catch {
    return (support = { unavailable: 'util-linux setsid was not found' });
  }
  return (support = { library: found.module });
}

/** Why a terminal cannot be opened here, or undefined when it can. */
export function terminalUnavailable(): string | undefined {
  const found = terminalSupport();
  return 'unavailable' in found ? found.unavailable : undefined;
}

let devNull: number | undefined;

/**
 * `stdio` for `child_process.spawn`, extended so that no terminal's master
 * reaches the child (the library leaves masters without close-on-exec, and a
 * master another process holds never lets its slave see the hang-up): each
 * descriptor number a master has is given /dev/null instead.
 */
export function shieldMasters<T>(stdio: Array<T | number | 'ignore'>): Array<T | number | 'ignore'> {
  // Opened close-on-exec by Node.js, kept for the process's life.
  devNull ??= openSync('/dev/null', constants.O_RDWR);
  return shieldMastersWith(stdio, devNull);
}

/** First and last wait before a write the terminal refused (EAGAIN: its input queue is full) is tried again. */
const RETRY_FIRST_MS = 1;
const RETRY_MAX_MS = 50;

/**
 * One command's pseudo-terminal. The master's bytes are output; input is
 * written to it. Once the command is spawned this process holds no slave,
 * as envd does, so the master reads end of file (EIO) once no process has
 * the terminal open any more.
 */
export class Terminal {
  readonly #device: PtyDevice;
  readonly #masterFd: number;
  #slaveFd: number | undefined;
  #open = true;
  /** Writes under way in the thread pool: the master is not closed under them. */
  #writing = 0;
  #closeWhenIdle = false;
  #size: { cols: number; rows: number };

  /** Opens a terminal of this size; throws why it cannot. */
  constructor(cols: number, rows: number) {
    const found = terminalSupport();
    if ('unavailable' in found) throw new Error(found.unavailable);
    const terminal = openPtyDevice(found.library, cols, rows);
    this.#device = terminal;
    this.#masterFd = terminal.masterFd;
    this.#slaveFd = terminal.slaveFd;
    this.#size = { cols, rows };
    // EIO is the master's end of file once no slave is open; 'close' follows.
    // (With this listener the library's own does not rethrow it.)
    terminal.master.on('error', () => undefined);
    // libuv takes a hang-up after a short read for end of file while the
    // terminal may still hold output: what is left is read before the
    // stream (which runs its own 'end' listener first) closes the master.
    terminal.master.prependListener('end', () => this.takeRest());
    terminal.master.once('close', () => {
      this.#open = false;
      forgetMaster(this.#masterFd);
    });
  }

  /** The stream of the master's bytes ('data' Buffers, 'close' at the end). */
  get output(): Readable {
    return this.#device.master;
  }

  get closed(): boolean {
    return !this.#open;
  }

  get size(): { readonly cols: number; readonly rows: number } {
    return { ...this.#size };
  }

  /** The command's `stdio`: the slave as 0, 1 and 2, and no master. */
  stdio(): Array<number | 'ignore'> {
    const slave = this.#slaveFd!;
    return shieldMasters([slave, slave, slave]);
  }

  /** Once the command has the slave: this process lets go of its own. */
  spawned(): void {
    const fd = this.#slaveFd;
    this.#slaveFd = undefined;
    if (fd !== undefined) closeQuietly(fd);
  }

  /** TIOCSWINSZ; the kernel sends SIGWINCH to the foreground group when the size changed. */
  resize(cols: number, rows: number): void {
    if (!this.#open) throw new Error('the terminal is closed');
    this.#device.resize(cols, rows);
    this.#size = { cols, rows };
  }

  /** Writes every byte to the master, as Go's `File.Write` does: a full input queue holds the write back. */
  async write(data: Uint8Array): Promise<void> {
    let offset = 0;
    let delay = RETRY_FIRST_MS;
    while (offset < data.byteLength) {
      if (!this.#open || this.#closeWhenIdle) throw new Error('write /dev/ptmx: file already closed');
      this.#writing++;
      const outcome = await new Promise<number | NodeJS.ErrnoException>((resolveWrite) => {
        write(this.#masterFd, data, offset, data.byteLength - offset, null, (error, written) => resolveWrite(error ?? written));
      });
      this.#writing--;
      if (this.#closeWhenIdle && this.#writing === 0) this.#closeMaster();
      if (typeof outcome === 'number') {
        offset += outcome;
        delay = RETRY_FIRST_MS;
      } else if (outcome.code === 'EAGAIN') {
        await new Promise((wake) => setTimeout(wake, delay));
        delay = Math.min(delay * 2, RETRY_MAX_MS);
      } else {
        throw new Error(`write /dev/ptmx: ${outcome.message}`);
      }
    }
  }

  /**
   * Reads what the master still holds (the stream's buffer first) and hands
   * it to the stream's 'data' listeners; before the master is closed.
   */
  takeRest(): void {
    const master = this.#device.master;
    if (master.destroyed) return;
    while (master.read() !== null);
    const buffer = Buffer.allocUnsafe(64 * 1024);
    for (;;) {
      let length: number;
      try {
        length = readSync(this.#masterFd, buffer, 0, buffer.length, null);
      } catch {
        return; // EAGAIN: nothing more now; EIO: nothing more ever.
      }
      if (length <= 0) return;
      master.emit('data', Buffer.from(buffer.subarray(0, length)));
    }
  }

  /** Closes the master (and a slave still held), once no write is under way: the terminal hangs up. */
  close(): void {
    if (this.#slaveFd !== undefined) this.spawned();
    this.#closeWhenIdle = true;
    if (this.#writing === 0) this.#closeMaster();
  }

  #closeMaster(): void {
    // The stream owns the descriptor: destroying it closes the master, and 'close' follows.
    if (!this.#device.master.destroyed) this.#device.master.destroy();
    else if (this.#open) {
      this.#open = false;
      forgetMaster(this.#masterFd);
    }
  }
}
