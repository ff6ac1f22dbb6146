import type { BackgroundProcess } from '../contract.js';
import { InvalidArgument, InvalidState, TransportError } from '../errors.js';
import { SIGNALS, type Signal } from '../options.js';
import type { ExecResult } from '../schema/exec-result.js';
import type { OutputChunk } from '../schema/output-chunk.js';
import type { BackgroundCommand, CommandSink, StreamCounts } from './background-command.js';

/** What a view needs of the sandbox that keeps the command's record. */
export interface CommandRegistry {
  /** Terminates the command if it runs, then removes its record: the disposal of an undetached view. */
  endAndForget(command: BackgroundCommand): Promise<void>;
}

/**
 * The reader state of one view, apart from the public object so that the
 * command holds only this: a view dropped without disposal can be collected
 * and its finalizer can end the command.
 */
class ViewSink implements CommandSink {
  readonly queue: OutputChunk[] = [];
  queued = 0;
  done = false;
  error: Error | undefined;
  /** Reading is over for this view: detached, discarded by wait(), or overrun. */
  dropping = false;
  #waiter: (() => void) | undefined;
  /**
   * While the kept tail is replayed into the queue: the replay is what the reader asked for,
   * not a lag. A full tail holds up to `replayBytes` and a chunk per stream, more than the
   * bound, so counting it would overrun every attach to a command that wrote that much.
   */
  #replaying = true;
  #bound: number;

  constructor(
    private readonly command: BackgroundCommand,
    bound: number,
  ) {
    this.#bound = bound;
  }

  /** The replay is queued: from now on the view may fall `bound` bytes behind beyond it. */
  replayed(): void {
    this.#replaying = false;
    this.#bound += this.queued;
  }

  push(chunk: OutputChunk): void {
    if (this.dropping || this.done) return;
    this.queue.push(chunk);
    this.queued += chunk.data.byteLength;
    if (!this.#replaying && this.queued > this.#bound) {
      // A reader this far behind would hold the command back or grow without bound: it loses its
      // Process instead (ADR-0036), never a silent gap. The command runs on, attachable.
      this.command.unsubscribe(this);
      this.end(
        new TransportError(`this Process fell more than ${this.#bound} bytes behind the background command; attach again to read its tail`, {
          commandId: this.command.commandId,
        }),
      );
      this.queue.length = 0;
      this.queued = 0;
      return;
    }
    this.#wake();
  }

  end(error: Error | undefined): void {
    if (this.done) return;
    this.done = true;
    this.error ??= error;
    this.#wake();
  }

  #wake(): void {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.();
  }

  async next(): Promise<IteratorResult<OutputChunk, undefined>> {
    for (;;) {
      const chunk = this.queue.shift();
      if (chunk !== undefined) {
        this.queued -= chunk.data.byteLength;
        return { value: chunk, done: false };
      }
      if (this.dropping && this.error === undefined) return { value: undefined, done: true };
      if (this.done) {
        if (this.error !== undefined) throw this.error;
        return { value: undefined, done: true };
      }
      await new Promise<void>((resolve) => (this.#waiter = resolve));
    }
  }

  /** Nobody will read what is queued or what comes: drop it. */
  drop(): void {
    this.dropping = true;
    this.queue.length = 0;
    this.queued = 0;
    this.#wake();
  }
}

function keepAlive(_owner: unknown): void {}

/** The safety net of SS-TEAR-9 for background Processes: one dropped undetached ends its command. */
const leaked = new FinalizationRegistry<{ command: BackgroundCommand; registry: CommandRegistry; sink: ViewSink }>((held) => {
  if (held.command.core.settled || held.sink.dropping) return;
  process.emitWarning(
    `A Sandstream background Process for ${JSON.stringify(held.command.core.plan.command.argv)} was garbage-collected ` +
      'without detach(); the command is being terminated. Call detach() to leave it running.',
    { code: 'SANDSTREAM_PROCESS_LEAKED' },
  );
  held.registry.endAndForget(held.command).catch(() => undefined);
});

/**
 * A Process over a {@link BackgroundCommand}: the one `stream(argv, {
 * background: true })` returns, or one `attach()` gives (ADR-0036).
 */
export class BackgroundView implements BackgroundProcess {
  readonly #command: BackgroundCommand;
  readonly #registry: CommandRegistry;
  readonly #sink: ViewSink;
  readonly #id: string;
  readonly #starter: boolean;
  readonly #skipped: StreamCounts | undefined;
  #iterated = false;
  #detached = false;
  #disposal: Promise<void> | undefined;

  constructor(command: BackgroundCommand, registry: CommandRegistry, options: { replay: boolean; bound: number; starter: boolean }) {
    this.#command = command;
    this.#registry = registry;
    this.#sink = new ViewSink(command, options.bound);
    const view = command.nextView();
    this.#starter = options.starter;
    this.#id = options.starter ? command.core.id : `${command.core.id}/attach-${view}`;
    this.#skipped = command.subscribe(this.#sink, options.replay);
    this.#sink.replayed();
    leaked.register(this, { command, registry, sink: this.#sink }, this);
  }

  get id(): string {
    return this.#id;
  }
  get argv(): readonly string[] {
    return this.#command.core.plan.command.argv;
  }
  get pid(): number | undefined {
    return this.#command.core.pid;
  }
  get commandId(): string | undefined {
    // The starter's: set once the start was confirmed, as for every Process (SS-ID-1), the
    // Sandstream id, not the pid. An attached Process's: the id it was attached by, at once.
    if (!this.#starter) return this.#command.commandId;
    return this.#command.core.pid !== undefined || this.#command.core.commandId !== undefined ? this.#command.commandId : undefined;
  }
  get stdin(): null {
    return null;
  }
  get exited(): boolean {
    return this.#command.core.settled;
  }
  get skipped(): Readonly<StreamCounts> | undefined {
    return this.#skipped;
  }

  [Symbol.asyncIterator](): AsyncIterator<OutputChunk, undefined> {
    if (this.#iterated) throw new InvalidState('a Process can be iterated only once');
    this.#iterated = true;
    const sink = this.#sink;
    const owner = this;
    return {
      next: () => sink.next(),
      // Leaving a for-await loop early is leaving the command's scope, unless it was detached.
      async return(): Promise<IteratorResult<OutputChunk, undefined>> {
        keepAlive(owner);
        await owner[Symbol.asyncDispose]();
        return { value: undefined, done: true };
      },
    };
  }

  started(): Promise<void> {
    return this.#command.core.started();
  }

  wait(): Promise<ExecResult> {
    if (this.#detached) return Promise.reject(new InvalidState('this Process was detached; attach() again to wait for the command'));
    // What no loop reads is discarded, as for every Process.
    if (!this.#iterated) this.#sink.drop();
    return this.#command.result().finally(() => keepAlive(this));
  }

  kill(signal: Signal = 'SIGTERM'): Promise<void> {
    if (this.#detached) return Promise.reject(new InvalidState('this Process was detached; attach() again to signal the command'));
    if (!SIGNALS.includes(signal)) {
      return Promise.reject(new InvalidArgument('signal', `must be one of ${SIGNALS.join(', ')}`));
    }
    return this.#command.kill(signal);
  }

  resize(cols: number, rows: number): Promise<void> {
    if (this.#detached) return Promise.reject(new InvalidState('this Process was detached; attach() again to resize the terminal'));
    return this.#command.resize(cols, rows);
  }

  async detach(): Promise<void> {
    await this.started();
    // Also when the command has ended: a detached Process's disposal must not forget it.
    if (this.#detached || this.#disposal !== undefined) return;
    this.#detached = true;
    leaked.unregister(this);
    this.#command.unsubscribe(this.#sink);
    this.#sink.drop();
  }

  [Symbol.asyncDispose](): Promise<void> {
    if (this.#detached) return Promise.resolve();
    this.#disposal ??= (async () => {
      leaked.unregister(this);
      this.#command.unsubscribe(this.#sink);
      this.#sink.drop();
      await this.#registry.endAndForget(this.#command);
    })();
    return this.#disposal;
  }

  get [Symbol.toStringTag](): string {
    return 'Process';
  }
}
