// The state of a driver in follow mode (driver-settings.ts, FollowMode): the bytes read from the
// record's files so far, the part of standard error a follow-only attach does not deliver, and
// the one-time start of a background command's record and supervisor.
import { SpawnFailed, TransportError, type Process } from '@sandstream/types';
import { driverOf, type CommandSpec } from '@sandstream/types/runtime';
import type { FollowMode, Offsets } from './driver-settings.js';
import type { RemoteTransport, TransportProcess } from './transport.js';

/** The answer of a background start's first request: the record made, the supervisor exec'd. */
const OK = 'ok\n';
/** The start of its answer where a command on a terminal finds no `script` (`noscript PATH`). */
const NOSCRIPT = 'noscript ';

/** What can cut its link: a driver in follow mode. */
interface Severable {
  /** Cuts the current link; false when there was none (the command ended, or the follower has not started). */
  sever(): boolean;
}

/** The drivers following each background command in this OS process, for {@link severFollowers}. */
const following = new Map<string, Set<Severable>>();

export function registerFollower(commandId: string, driver: Severable): void {
  let drivers = following.get(commandId);
  if (drivers === undefined) following.set(commandId, (drivers = new Set()));
  drivers.add(driver);
}

export function unregisterFollower(commandId: string, driver: Severable): void {
  const drivers = following.get(commandId);
  drivers?.delete(driver);
  if (drivers?.size === 0) following.delete(commandId);
}

/**
 * Cuts every link this OS process holds to the background command
 * `commandId`, as a proxy that drops the connections would: each driver
 * then follows again from the bytes it read, or fails with the id. For the
 * conformance kit's `sever` hook and fault tests; returns how many links
 * were cut. {@link severLinks} takes a Process of either kind.
 *
 * @example
 * ```ts
 * import { severFollowers } from '@sandstream/remote';
 * import type { BackgroundProcess } from '@sandstream/types';
 * export const conformanceHooks = {
 *   sever: (process: BackgroundProcess) => severFollowers(process.commandId ?? ''),
 * };
 * ```
 */
export function severFollowers(commandId: string): number {
  let cut = 0;
  for (const driver of [...(following.get(commandId) ?? [])]) if (driver.sever()) cut += 1;
  return cut;
}

/**
 * Cuts the links this OS process holds to the command `process` reads, as
 * a proxy that drops the connections would: for a background Process,
 * every follower of its command ({@link severFollowers}); for a foreground
 * one, its stream, after which the driver ends the command's tree and the
 * Process fails with `TransportError` (spec 1.4, the owner-loss rule).
 * For an adapter's conformance hook `sever`; returns how many links were cut.
 *
 * @example
 * ```ts
 * import { severLinks } from '@sandstream/remote';
 * import type { Process } from '@sandstream/types';
 * export const conformanceHooks = {
 *   sever: (process: Process) => severLinks(process),
 * };
 * ```
 */
export function severLinks(process: Process): number {
  const driver = driverOf(process);
  if (driver !== undefined) return isSeverable(driver) && driver.sever() ? 1 : 0;
  return severFollowers(process.commandId ?? '');
}

function isSeverable(driver: object): driver is Severable {
  return typeof (driver as Partial<Severable>).sever === 'function';
}

/** Why a background start made no record, from its answer. */
function refusal(said: string): string {
  const script = /^noscript (.*)\n/.exec(said)?.[1];
  if (script !== undefined) return `ENOENT: the sandbox has no ${JSON.stringify(script)} (util-linux's script), which a background command on a terminal needs`;
  return `the background command's record could not be made: ${JSON.stringify(said.trim())}`;
}

export class Following {
  /** Bytes of each file delivered by followers so far, from `mode.from`. */
  readonly #read = { stdout: 0, stderr: 0 };
  constructor(readonly mode: FollowMode) {}

  /** Where the next follower starts: where the last one stopped. */
  offsets(): Offsets {
    return { stdout: this.mode.from.stdout + this.#read.stdout, stderr: this.mode.from.stderr + this.#read.stderr };
  }

  /** Counts standard output read. */
  stdout(data: Uint8Array): void {
    this.#read.stdout += data.byteLength;
  }

  /** Counts standard error read, split at the point before which its output is not delivered. */
  stderr(data: Uint8Array): { readonly hidden: Uint8Array; readonly shown: Uint8Array } {
    const at = this.mode.from.stderr + this.#read.stderr;
    this.#read.stderr += data.byteLength;
    const cut = Math.max(0, Math.min(data.byteLength, this.mode.dropStderrBefore - at));
    return { hidden: data.subarray(0, cut), shown: data.subarray(cut) };
  }

  /**
   * Runs the start request that makes the record and execs the supervisor,
   * once, never repeated: resolves on its `ok`; rejects with `SpawnFailed`
   * when it answered otherwise (nothing runs), with `TransportError`
   * carrying the command's id when its outcome is unknown (the record may
   * appear: `attach(id)` then finds it, `close()` ends it by its tag).
   */
  launch(transport: RemoteTransport, command: CommandSpec, id: string, describe: (error: unknown) => string): Promise<void> {
    const request = this.mode.launch;
    if (request === undefined) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      let said = '';
      let settled = false;
      let started: TransportProcess | undefined;
      const settle = (error?: Error): void => {
        if (settled) return;
        settled = true;
        // The wrapper's own streams only: the supervisor it became writes to the record's files.
        started?.close();
        if (error === undefined) resolve();
        else reject(error);
      };
      started = transport.start(request, {
        output: (stream, data) => {
          if (stream !== 'stderr' || settled) return;
          said += Buffer.from(data).toString('latin1');
          if (said.startsWith(OK)) settle();
          // A whole line that is not `ok`, or the start of none that could be.
          else if (said.includes('\n') || !(OK.startsWith(said) || NOSCRIPT.startsWith(said) || said.startsWith(NOSCRIPT))) settle(new SpawnFailed(command.argv, refusal(said)));
        },
        end: (end) => {
          if (end.kind === 'broken') {
            settle(new TransportError(`the start of background command ${id} has an unknown outcome: ${describe(end.error)}`, { cause: end.error, commandId: id }));
          } else if (end.kind === 'refused') {
            settle(new SpawnFailed(command.argv, end.reason, end.error === undefined ? undefined : { cause: end.error }));
          } else {
            settle(new SpawnFailed(command.argv, `the background start ended before its record was made${said === '' ? '' : `: ${JSON.stringify(said.trim())}`}`));
          }
        },
      });
      if (settled) started.close();
    });
  }
}
