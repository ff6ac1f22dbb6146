import type { BackgroundProcess, CommandInfo } from '../contract.js';
import { CommandNotFound, InvalidArgument, SpawnFailed } from '../errors.js';
import type { AttachOptions } from '../options.js';
import { BackgroundCommand } from './background-command.js';
import { BackgroundView, type CommandRegistry } from './background-process.js';
import { describe } from './describe.js';
import { isPlainObject } from './plain-object.js';
import type { ProcessCore } from './process-core.js';

/** The options of `attach()`, checked before anything is looked up. */
function attachReplay(options: unknown): boolean {
  if (options === undefined) return true;
  if (!isPlainObject(options)) throw new InvalidArgument('options', `must be an object, got ${describe(options)}`);
  for (const key of Object.keys(options)) if (key !== 'replay') throw new InvalidArgument(`options.${key}`, 'unknown option');
  const replay = options['replay'];
  if (replay !== undefined && typeof replay !== 'boolean') throw new InvalidArgument('options.replay', `must be a boolean, got ${describe(replay)}`);
  return replay ?? true;
}

/**
 * The background commands of one sandbox built by `defineSandbox` (spec 1.2,
 * ADR-0036), kept in the host process: the record of each, from its start
 * until it is forgotten or the sandbox closes.
 */
export class BackgroundRegistry implements CommandRegistry {
  readonly #commands = new Map<string, BackgroundCommand>();

  /**
   * @param replayBytes - bytes of each stream kept for a later attach (at least)
   * @param bound - bytes a view may fall behind before it loses its Process
   */
  constructor(
    private readonly replayBytes: number,
    private readonly bound: number,
  ) {}

  /** Records a started core as a background command and gives the starter's Process. */
  start(core: ProcessCore): BackgroundProcess {
    const command = new BackgroundCommand(core, this.replayBytes);
    this.#commands.set(command.commandId, command);
    // A command that never started has nothing to attach to.
    core.started().catch((error: unknown) => {
      if (error instanceof SpawnFailed) this.#commands.delete(command.commandId);
    });
    return new BackgroundView(command, this, { replay: true, bound: this.bound, starter: true });
  }

  /** `attach()`: every check, then the lookup, before any side effect. */
  attach(commandId: unknown, options: unknown): BackgroundProcess {
    if (typeof commandId !== 'string' || commandId === '') {
      throw new InvalidArgument('commandId', `must be a non-empty string, got ${describe(commandId)}`);
    }
    const replay = attachReplay(options as AttachOptions | undefined);
    const command = this.#commands.get(commandId);
    if (command === undefined) throw new CommandNotFound(commandId);
    return new BackgroundView(command, this, { replay, bound: this.bound, starter: false });
  }

  list(): CommandInfo[] {
    return [...this.#commands.values()].map((command) => command.info());
  }

  async endAndForget(command: BackgroundCommand): Promise<void> {
    try {
      await command.terminate();
    } finally {
      // A termination that could not be confirmed leaves the record: the command may still run.
      if (command.core.settled) this.#commands.delete(command.commandId);
    }
  }

  /** At close: after every core was disposed, no record is kept. */
  clear(): void {
    this.#commands.clear();
  }
}
