import { randomUUID } from 'node:crypto';
import type { CommandInfo } from '../contract.js';
import type { Signal } from '../options.js';
import type { ExecResult } from '../schema/exec-result.js';
import type { OutputChunk, StreamName } from '../schema/output-chunk.js';
import type { ProcessCore } from './process-core.js';

/** Bytes of each stream a background command keeps for a later attach, by default (ADR-0036: 4 MiB in host memory). */
export const DEFAULT_REPLAY_BYTES = 4 * 1024 * 1024;

import type { StreamCounts } from './background-backend.js';

export type { StreamCounts } from './background-backend.js';

/** What a reader of a background command receives: its chunks in order, then the end. */
export interface CommandSink {
  /** A chunk the command wrote. */
  push(chunk: OutputChunk): void;
  /** The command's output ended; `error` when it ended by a failure. */
  end(error: Error | undefined): void;
}

/** Chunks of one stream, the oldest dropped once more than the bound is kept; `start` is the offset of the first. */
class Tail {
  readonly chunks: Uint8Array[] = [];
  start = 0;
  kept = 0;
  constructor(private readonly bound: number) {}

  add(data: Uint8Array): void {
    this.chunks.push(data);
    this.kept += data.byteLength;
    // Whole chunks only, while what stays still holds the bound: the offsets stay exact.
    while (this.chunks.length > 1 && this.kept - this.chunks[0]!.byteLength >= this.bound) {
      const dropped = this.chunks.shift()!;
      this.kept -= dropped.byteLength;
      this.start += dropped.byteLength;
    }
  }
}

/**
 * A background command of the host runtime (spec 1.2, ADR-0036): the
 * sandbox, not a Process, owns it. It reads the core without pause, keeps
 * the last `replayBytes` of each stream (at least) for a later attach, and
 * hands every chunk to the sinks of the Processes attached to it.
 */
export class BackgroundCommand {
  readonly #tails: Record<StreamName, Tail>;
  readonly #sinks = new Set<CommandSink>();
  readonly #pumped: Promise<void>;
  #ended = false;
  #error: Error | undefined;
  #views = 0;

  /**
   * @param commandId - The id `attach()` takes: assigned before the start, never a pid (which is
   *   reused); a UUID when the backend keeps no records of its own.
   * @param followed - For a command another start began, followed by a driver of the backend:
   *   what that driver skipped (its views then count nothing themselves).
   */
  constructor(
    readonly core: ProcessCore,
    replayBytes: number,
    readonly commandId: string = randomUUID(),
    readonly followed?: { readonly skipped: StreamCounts | undefined },
  ) {
    this.#tails = { stdout: new Tail(replayBytes), stderr: new Tail(replayBytes) };
    core.attachReader();
    this.#pumped = this.#pump();
  }

  async #pump(): Promise<void> {
    try {
      for (;;) {
        const next = await this.core.next();
        if (next.done === true) break;
        const chunk = next.value;
        this.#tails[chunk.stream].add(chunk.data);
        for (const sink of this.#sinks) sink.push(chunk);
      }
    } catch (error) {
      this.#error = error instanceof Error ? error : new Error(String(error));
    }
    this.#ended = true;
    for (const sink of this.#sinks) sink.end(this.#error);
    this.#sinks.clear();
  }

  /** Whether every chunk was handed out and the end is known. */
  get ended(): boolean {
    return this.#ended;
  }

  /** The next view's number, for a unique Process id. */
  nextView(): number {
    return ++this.#views;
  }

  /** What `commands()` lists. */
  info(): CommandInfo {
    const terminal = this.core.terminal?.size;
    return {
      commandId: this.commandId,
      argv: this.core.plan.command.argv,
      state: this.#ended && this.core.settled ? 'ended' : 'running',
      ...(terminal === undefined ? {} : { terminal }),
    };
  }

  /**
   * Adds a reader. With `replay`, it first receives the kept tail of each
   * stream; without, only what follows. Returns, per stream, the bytes before
   * its first one. Synchronous, so no chunk falls between the replay and the
   * live ones.
   */
  subscribe(sink: CommandSink, replay: boolean): StreamCounts | undefined {
    const skipped: StreamCounts = { stdout: 0, stderr: 0 };
    for (const stream of ['stdout', 'stderr'] as const) {
      const tail = this.#tails[stream];
      if (replay) {
        skipped[stream] = tail.start;
        for (const data of tail.chunks) sink.push({ stream, data });
      } else {
        skipped[stream] = tail.start + tail.kept;
      }
    }
    // Replayed chunks are handed stream by stream: per stream the order is exact, which is what
    // the replay promises; live chunks keep their arrival order across streams.
    if (this.#ended) sink.end(this.#error);
    else this.#sinks.add(sink);
    // A followed command's one view sees everything its driver delivers: the driver's count holds.
    return this.followed !== undefined ? this.followed.skipped : skipped;
  }

  /** Whether a Process not detached still reads this command. */
  get read(): boolean {
    return this.#sinks.size > 0;
  }

  /** Removes a reader: it receives nothing more. */
  unsubscribe(sink: CommandSink): void {
    this.#sinks.delete(sink);
  }

  /** The command's result, once its output was handed out. */
  async result(): Promise<ExecResult> {
    await this.#pumped;
    return this.core.result();
  }

  kill(signal: Signal): Promise<void> {
    return this.core.kill(signal);
  }

  /** Sets the terminal's size from any handle holding the command (spec 1.5): the last call wins. */
  resize(cols: number, rows: number): Promise<void> {
    return this.core.resize(cols, rows);
  }

  /** SIGTERM, SIGKILL after the grace period, the exit awaited (section 9.8); then every reader ended. */
  async terminate(): Promise<void> {
    await this.core.dispose();
    await this.#pumped;
  }
}
