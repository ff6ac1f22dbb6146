import type { CommandInfo } from '../contract.js';
import type { TerminalSize } from '../options.js';
import type { ProcessDriver } from './driver.js';
import type { CommandSpec } from './execution-plan.js';

/** Per stream, a count of bytes. */
export type StreamCounts = { stdout: number; stderr: number };

/** A driver that follows a background command another start began, and what it replays. */
export interface FollowedCommand {
  /**
   * Delivers the command's output (from its first byte, or from the moment
   * of the attach) and its end. Its `start()` resolves with the command's
   * identity; `signal()` reaches the command's tree; `release()` stops
   * following and never touches the command.
   */
  readonly driver: ProcessDriver;
  /** The command as it was started. */
  readonly argv: readonly string[];
  /** Per stream, the bytes before the first one the driver delivers; undefined where not counted. */
  readonly skipped: StreamCounts | undefined;
  /**
   * The size last set of the command's terminal (spec 1.5), for a command on one: the Process
   * attached to it then resizes it through the driver. Undefined on pipes.
   */
  readonly terminal?: TerminalSize | undefined;
}

/**
 * The optional part of a {@link SandboxBackend} that keeps background
 * commands in the backend instead of this host process (spec 1.2,
 * ADR-0036): what a remote adapter implements so that another handle, in
 * another OS process too, can list and attach them. Without it,
 * `defineSandbox` keeps them in its own registry.
 */
export interface BackgroundBackend {
  /**
   * The driver of a background start and the id `attach()` will take: the
   * command must survive the driver's connection. Like `createDriver`, it
   * must not start anything: the runtime calls `start()`.
   */
  start(command: CommandSpec): { readonly driver: ProcessDriver; readonly commandId: string };
  /**
   * Finds a background command and makes the driver that follows it; rejects
   * with `CommandNotFound` when no record has the id, having started nothing.
   */
  follow(commandId: string, replay: boolean): Promise<FollowedCommand>;
  /** Every background command of the environment, running and ended. */
  list(): Promise<readonly CommandInfo[]>;
  /** Removes an ended (or killed) command's record. */
  forget(commandId: string): Promise<void>;
}
