/**
 * The plain mode's pseudo-terminals (spec 1.5, ADR-0053): the library only
 * allocates (`open()`) and resizes the terminal; the command is started by
 * the driver with `setsid --ctty` and the slave as its standard streams,
 * and this module reads the master, writes to it, and decides when the
 * terminal is closed.
 *
 * Never call the library terminal's `destroy()` or `kill()`: its pid is -1,
 * and both end in `process.kill(-1, 'SIGHUP')`, a signal to every process
 * this one may signal. Every descriptor is closed here, by hand.
 */
import { closeSync, readSync, write } from 'node:fs';
import { StdinClosed, type TerminalSize } from '@sandstream/types';
import type { DriverEvents } from '@sandstream/types/runtime';
import { forgetMaster, openPtyDevice, shieldMasters, type LocalPtyModule, type PtyDevice } from './pty.js';

/** Quiet polls, once nothing of the session is left, after which the held slave is closed. */
const QUIET_POLLS_BEFORE_CLOSE = 1;
/** Quiet polls, after the slave was closed and SIGKILL sent, after which a master without end-of-file is given up. */
const QUIET_POLLS_BEFORE_GIVE_UP = 2;
/** First and last wait before a write the kernel refused (EAGAIN) is tried again. */
const RETRY_FIRST_MS = 1;
const RETRY_MAX_MS = 50;

/** What one read of our own takes from a master at the end (see `Terminal.sessionGone`). */
const DRAIN_BUFFER = Buffer.alloc(64 * 1024);

/** A write waiting for the kernel to take its bytes. */
interface PendingWrite {
  readonly data: Uint8Array;
  offset: number;
  /** Input was stopped while this write was in the thread pool: why, for the part it leaves unwritten. */
  stopped?: string;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

/**
 * One command's pseudo-terminal. Output is every byte of the master, as
 * `stdout`. The slave this process holds keeps the master from reading
 * end-of-file (EIO) while the session may still write; it is closed once
 * the driver says the session is gone and output has gone quiet, after
 * which the kernel hands over what is buffered and then EIO ends the
 * master's stream: nothing written before the session ended is lost.
 */
export class Terminal {
  readonly #device: PtyDevice;
  readonly #masterFd: number;
  /** The slave, opened blocking (the library's is non-blocking): the command's standard streams. */
  #slaveFd: number | undefined;
  #masterOpen = true;
  #inputOpen = true;
  #pending: PendingWrite | undefined;
  /** An fs.write on the master is in the thread pool: the master must not be closed under it. */
  #writing = false;
  #retryTimer: NodeJS.Timeout | undefined;
  #retryDelay = RETRY_FIRST_MS;
  #bytesSeen = 0;
  #bytesAtLastPoll = -1;
  #quietPolls = 0;
  /** The runtime paused output: the slave is not closed then, or what the master holds could be dropped. */
  #paused = false;
  #closeSlaveWhenIdle = false;
  #onClosed: (() => void) | undefined;

  /** Opens a terminal of `size`; throws what the library throws (out of terminals, of descriptors). */
  constructor(module: LocalPtyModule, size: TerminalSize) {
    const device = openPtyDevice(module, size.cols, size.rows);
    this.#device = device;
    this.#masterFd = device.masterFd;
    this.#slaveFd = device.slaveFd;
    device.master.on('data', (data: Buffer) => {
      this.#bytesSeen += data.byteLength;
      this.#events?.output('stdout', data);
    });
    // EIO is the master's end-of-file once no slave is open; 'close' follows.
    // (With this listener the library's own one does not rethrow the error.)
    device.master.on('error', () => undefined);
    device.master.once('close', () => {
      this.#masterOpen = false;
      forgetMaster(this.#masterFd);
      this.#closeSlave();
      this.#onClosed?.();
    });
  }

  #events: DriverEvents | undefined;

  /** Starts reporting output to `events`, and `onClosed` once the master's stream has ended. */
  attach(events: DriverEvents, onClosed: () => void): void {
    this.#events = events;
    this.#onClosed = onClosed;
  }

  /** The command's standard streams, and each other open master replaced by the slave: no child inherits a master. */
  stdio(): Array<number | 'ignore'> {
    const slave = this.#slaveFd!;
    return shieldMasters([slave, slave, slave], slave);
  }

  get closed(): boolean {
    return !this.#masterOpen;
  }

  /** Sets the window size (TIOCSWINSZ); the kernel sends SIGWINCH to the foreground group when it changed. */
  resize(cols: number, rows: number): void {
    if (!this.#masterOpen) throw new StdinClosed('the terminal is closed');
    this.#device.resize(cols, rows);
  }

  /**
   * Writes raw bytes to the master; resolves once the kernel took them all.
   * A full input queue (EAGAIN) is tried again on a timer, so a command that
   * does not read holds the write back.
   */
  write(data: Uint8Array): Promise<void> {
    if (!this.#inputOpen) return Promise.reject(new StdinClosed('the terminal takes no more input'));
    return new Promise((resolve, reject) => {
      this.#pending = { data, offset: 0, resolve, reject };
      this.#pump();
    });
  }

  #pump(): void {
    const pending = this.#pending;
    if (pending === undefined || this.#writing) return;
    if (pending.offset >= pending.data.byteLength) {
      this.#pending = undefined;
      this.#retryDelay = RETRY_FIRST_MS;
      pending.resolve();
      return;
    }
    this.#writing = true;
    write(this.#masterFd, pending.data, pending.offset, pending.data.byteLength - pending.offset, null, (error, written) => {
      this.#writing = false;
      if (error === null) pending.offset += written;
      if (pending.stopped !== undefined) {
        // Input stopped while this write was under way (the session ended: a 0x03 that ended it
        // is such a write): what the kernel took in full was delivered; the rest never will be.
        this.#pending = undefined;
        if (pending.offset >= pending.data.byteLength) pending.resolve();
        else pending.reject(new StdinClosed(pending.stopped));
        // The slave and the master may wait for this write to end.
        this.#afterWrite();
        return;
      }
      if (error === null) {
        this.#retryDelay = RETRY_FIRST_MS;
        this.#pump();
        return;
      }
      if (error.code === 'EAGAIN') {
        this.#retryTimer = setTimeout(() => this.#pump(), this.#retryDelay);
        this.#retryDelay = Math.min(this.#retryDelay * 2, RETRY_MAX_MS);
        return;
      }
      this.#pending = undefined;
      pending.reject(new StdinClosed(`the terminal refused input (${error.code ?? error.message})`, { cause: error }));
    });
  }

  /** Under a terminal, ending input only stops writes: end-of-file is typed by the runtime, and the master stays open. */
  endInput(): void {
    this.#inputOpen = false;
  }

  pause(): void {
    this.#paused = true;
    this.#device.master.pause();
  }

  resume(): void {
    this.#paused = false;
    this.#device.master.resume();
  }

  /**
   * For a poll once nothing of the session is left: refuses further input
   * and, once output has stayed quiet for a poll and no write is under
   * way, closes the held slave; the master then drains and ends.
   */
  sessionGone(): void {
    this.#stopInput('the terminal\'s session has ended');
    if (this.#slaveFd === undefined || this.#paused) return;
    if (!this.#quiet(QUIET_POLLS_BEFORE_CLOSE)) return;
    // Quiet to the stream's reader is not empty in the kernel: under load the reader may not have
    // run since the last bytes came. The slave is closed only once a read of our own finds the
    // master empty, since the stream takes a hang-up that follows a short read for its end and
    // drops what is still buffered (lost tails were measured under load without this).
    if (this.#drainNow()) return;
    this.#closeSlaveWhenIdle = true;
    this.#afterWrite();
  }

  /**
   * Reads what the master holds now, without waiting, and reports it as
   * output; true when it read anything. The stream has reported every byte
   * it read before this runs (its reads and their events happen together),
   * so the order holds.
   */
  #drainNow(): boolean {
    let read = 0;
    for (;;) {
      let count: number;
      try {
        count = readSync(this.#masterFd, DRAIN_BUFFER, 0, DRAIN_BUFFER.byteLength, null);
      } catch {
        // EAGAIN: nothing buffered. Anything else is the stream's to report.
        break;
      }
      if (count <= 0) break;
      read += count;
      this.#bytesSeen += count;
      this.#events?.output('stdout', Uint8Array.from(DRAIN_BUFFER.subarray(0, count)));
    }
    return read > 0;
  }

  /**
   * For a poll after SIGKILL, the session gone and the slave closed, while
   * the master has not ended: a process that left the session holds the
   * slave. Once output stayed quiet, the master is closed and this returns true.
   */
  giveUpWhenQuiet(): boolean {
    if (this.#slaveFd !== undefined || !this.#quiet(QUIET_POLLS_BEFORE_GIVE_UP)) return false;
    this.#closeMasterWhenIdle();
    return true;
  }

  /** Closes everything (release): refuses input, then closes the slave and the master once no write is under way. */
  destroy(): void {
    this.#stopInput('the terminal is closed');
    this.#closeSlaveWhenIdle = true;
    this.#closeMasterWhenIdle();
  }

  #quiet(polls: number): boolean {
    this.#quietPolls = this.#bytesAtLastPoll === this.#bytesSeen ? this.#quietPolls + 1 : 0;
    this.#bytesAtLastPoll = this.#bytesSeen;
    return this.#quietPolls >= polls;
  }

  #stopInput(reason: string): void {
    this.#inputOpen = false;
    clearTimeout(this.#retryTimer);
    const pending = this.#pending;
    if (pending === undefined) return;
    if (this.#writing) {
      // Its write's end settles it: bytes the kernel took were delivered (the write that ended
      // the session, a 0x03, is one), and only what it leaves is refused.
      pending.stopped = reason;
      return;
    }
    this.#pending = undefined;
    if (pending.offset >= pending.data.byteLength) pending.resolve();
    else pending.reject(new StdinClosed(reason));
  }

  #masterClosePending = false;

  #closeMasterWhenIdle(): void {
    this.#masterClosePending = true;
    this.#afterWrite();
  }

  /** Closes what waits for the thread pool's write to end: a descriptor closed under it could be another file by then. */
  #afterWrite(): void {
    if (this.#writing) return;
    if (this.#closeSlaveWhenIdle) this.#closeSlave();
    if (this.#masterClosePending) this.#closeMaster();
  }

  #closeSlave(): void {
    const fd = this.#slaveFd;
    if (fd === undefined) return;
    this.#slaveFd = undefined;
    try {
      closeSync(fd);
    } catch {
      // Closed already: nothing is held.
    }
  }

  #closeMaster(): void {
    // The stream owns the descriptor: destroying it closes the master (and 'close' follows).
    if (this.#masterOpen && !this.#device.master.destroyed) this.#device.master.destroy();
  }
}
