import type { BackgroundProcess, CommandInfo } from '../contract.js';
import { CommandNotFound, InvalidArgument, SpawnFailed, TransportError } from '../errors.js';
import type { BackgroundBackend } from './background-backend.js';
import { BackgroundCommand } from './background-command.js';
import { BackgroundView, type CommandRegistry } from './background-process.js';
import { describeValue } from './describe-value.js';
import type { ProcessDriver } from './driver.js';
import { planStream, type ExecutionPlan } from './execution-plan.js';
import { isPlainObject } from './plain-object.js';
import type { ProcessCore } from './process-core.js';

/** The options of `attach()`, checked before anything is looked up. */
function attachReplay(options: unknown): boolean {
  if (options === undefined) return true;
  if (!isPlainObject(options)) throw new InvalidArgument('options', `must be an object, got ${describeValue(options)}`);
  for (const key of Object.keys(options)) if (key !== 'replay') throw new InvalidArgument(`options.${key}`, 'unknown option');
  const replay = options['replay'];
  if (replay !== undefined && typeof replay !== 'boolean') throw new InvalidArgument('options.replay', `must be a boolean, got ${describeValue(replay)}`);
  return replay ?? true;
}

/** What the registry needs of the sandbox: a core over a driver, counted among its live ones. */
export type LaunchCore = (plan: ExecutionPlan, driver: ProcessDriver | undefined) => ProcessCore;

/**
 * The background commands of one sandbox built by `defineSandbox` (spec 1.2,
 * ADR-0036). Without a {@link BackgroundBackend} they are kept in this host
 * process, from the start until forgotten or closed; with one, the backend
 * keeps their records, and each attach is a driver that follows one.
 */
export class BackgroundRegistry implements CommandRegistry {
  /** The commands this handle started, by id (every one, in the host mode). */
  readonly #commands = new Map<string, BackgroundCommand>();
  /** With a backend: the commands this handle attached to, one driver each. */
  readonly #followed = new Set<BackgroundCommand>();

  /**
   * @param replayBytes - bytes of each stream kept for a later attach in the host mode (at least)
   * @param bound - bytes a view may fall behind before it loses its Process
   */
  constructor(
    private readonly replayBytes: number,
    private readonly bound: number,
    private readonly launch: LaunchCore,
    private readonly backend: BackgroundBackend | undefined,
  ) {}

  /** Starts a background command and gives the starter's Process. */
  start(plan: ExecutionPlan): BackgroundProcess {
    const started = this.backend?.start(plan.command);
    const core = this.launch(plan, started?.driver);
    const command = new BackgroundCommand(core, this.replayBytes, started?.commandId);
    this.#commands.set(command.commandId, command);
    // A command that never started has nothing to attach to.
    core.started().catch((error: unknown) => {
      if (!(error instanceof SpawnFailed)) return;
      this.#commands.delete(command.commandId);
      // A backend's record of a start that failed tells nothing more than the error did.
      this.backend?.forget(command.commandId).catch(() => undefined);
    });
    return new BackgroundView(command, this, { replay: true, bound: this.bound, starter: true });
  }

  /** `attach()`: every check, then the lookup, before any side effect. */
  async attach(commandId: unknown, options: unknown): Promise<BackgroundProcess> {
    if (typeof commandId !== 'string' || commandId === '') {
      throw new InvalidArgument('commandId', `must be a non-empty string, got ${describeValue(commandId)}`);
    }
    const replay = attachReplay(options);
    if (this.backend === undefined) {
      const command = this.#commands.get(commandId);
      if (command === undefined) throw new CommandNotFound(commandId);
      return new BackgroundView(command, this, { replay, bound: this.bound, starter: false });
    }
    const followed = await this.backend.follow(commandId, replay);
    const core = this.launch(planStream(followed.argv, followed.terminal === undefined ? undefined : { pty: followed.terminal }), followed.driver);
    const command = new BackgroundCommand(core, this.replayBytes, commandId, { skipped: followed.skipped });
    this.#followed.add(command);
    void core.whenSettled().then(() => this.#followed.delete(command));
    return new BackgroundView(command, this, { replay: true, bound: this.bound, starter: false });
  }

  async list(): Promise<CommandInfo[]> {
    if (this.backend !== undefined) return [...(await this.backend.list())];
    return [...this.#commands.values()].map((command) => command.info());
  }

  async endAndForget(command: BackgroundCommand): Promise<void> {
    try {
      await command.terminate();
    } finally {
      // A termination that could not be confirmed leaves the record: the command may still run.
      if (command.core.settled) {
        if (this.#commands.get(command.commandId) === command) this.#commands.delete(command.commandId);
        this.#followed.delete(command);
      }
    }
    if (command.core.settled) await this.backend?.forget(command.commandId);
  }

  /**
   * At close, before the live cores are disposed: a command this handle
   * attached to but did not start ends only when a Process not detached
   * still reads it (ADR-0036, "Ownership"); otherwise only the following
   * stops, and the command runs on, owned by its starter.
   */
  letGoOfOthers(): void {
    for (const command of this.#followed) {
      if (command.read || this.#commands.has(command.commandId)) continue;
      command.core.failTransport(new TransportError('the sandbox handle that followed this command was closed', { commandId: command.commandId }));
    }
  }

  /** At close: after every core was disposed, no record is kept here. */
  clear(): void {
    this.#commands.clear();
    this.#followed.clear();
  }
}
