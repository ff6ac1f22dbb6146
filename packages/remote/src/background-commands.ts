/**
 * The remote kit's part of spec 1.2's background commands (ADR-0036): the
 * runtime's `BackgroundBackend` over a transport. Records live in the
 * sandbox (`background.ts`), so any handle on the same environment, in
 * another OS process too, lists them and attaches through a follower.
 */
import { randomUUID } from 'node:crypto';
import { CommandNotFound, SandstreamError, TransportError, type CommandInfo, type TerminalSize } from '@sandstream/types';
import type { BackgroundBackend, CommandSpec, FollowedCommand } from '@sandstream/types/runtime';
import { backgroundArgv, DEFAULT_RECORD_BASE, followerArgv, isRecordId, recordsArgv } from './background.js';
import { RemoteDriver } from './driver.js';
import type { FollowMode, Offsets, RemoteDriverSettings } from './driver-settings.js';
import { DEFAULT_PATHS, launchRequest } from './launch.js';
import { retry } from './retry.js';
import { TAG_VARIABLE } from './supervisor.js';
import type { StartRequest } from './transport.js';

/** What a short program printed, and how it ended. */
interface Answer {
  readonly exitCode: number | null | undefined;
  readonly stdout: string;
}

/** The handle's side of the background commands: its id prefix, and the accounts its commands ran as. */
export interface BackgroundHandle {
  readonly prefix: string;
  readonly users: Set<string | undefined>;
}

/** Parses the `show` answer of `sandstream-records`. */
function parseShown(id: string, stdout: string): { offsets: Offsets; account: string | undefined; argv: readonly string[]; terminal: TerminalSize | undefined } {
  const fields = new Map<string, string>();
  for (const line of stdout.split('\n')) {
    const space = line.indexOf(' ');
    if (space > 0) fields.set(line.slice(0, space), line.slice(space + 1));
  }
  const offsets = /^(\d+) (\d+)$/.exec(fields.get('offsets') ?? '');
  const argv: unknown = JSON.parse(fields.get('argv') ?? 'null');
  if (offsets === null || !Array.isArray(argv) || !argv.every((word) => typeof word === 'string') || argv.length === 0) {
    throw new TransportError(`the record of background command ${id} is not readable: ${JSON.stringify(stdout.slice(0, 200))}`);
  }
  const account = fields.get('account') ?? '';
  const size = /^(\d+) (\d+)$/.exec(fields.get('terminal') ?? '');
  const terminal = size === null ? undefined : { cols: Number(size[1]), rows: Number(size[2]) };
  return { offsets: { stdout: Number(offsets[1]), stderr: Number(offsets[2]) }, account: account === '' ? undefined : account, argv: argv as string[], terminal };
}

/** Background commands over one handle's transport (see {@link RemoteCommands.background}). */
export class RemoteBackground implements BackgroundBackend {
  /** The account of each command this handle started or followed, for its removal. */
  readonly #accounts = new Map<string, string | undefined>();
  /** Whether this handle started a background command: only then has it records to remove at close. */
  #started = false;

  constructor(
    private readonly settings: RemoteDriverSettings,
    private readonly handle: BackgroundHandle,
    /** Where records are made: `${base}${id}`. */
    readonly base: string = DEFAULT_RECORD_BASE,
  ) {}

  #follower(dir: string, id: string, user: string | undefined, tag: string): (offsets: Offsets) => StartRequest {
    const shell = this.settings.paths.shell;
    // Tagged by this handle's prefix: its close-time sweep ends the followers it left.
    return (offsets) => ({ argv: followerArgv(shell, dir, id, offsets), env: { [TAG_VARIABLE]: tag }, cwd: '/', user, stdin: false, id: tag });
  }

  start(command: CommandSpec): { readonly driver: RemoteDriver; readonly commandId: string } {
    const { prefix, users } = this.handle;
    const id = `${prefix}-${randomUUID()}`;
    this.#started = true;
    users.add(command.user);
    this.#accounts.set(id, command.user);
    const dir = `${this.base}${id}`;
    const { shell, script } = this.settings.paths;
    const pty = command.pty;
    // On a terminal (spec 1.5), the supervisor runs under `script`, which holds the terminal and
    // outlives any connection, its reports in the record's `err`.
    const supervisor = launchRequest(id, command, this.settings, undefined, pty === undefined ? undefined : { record: dir, size: pty, inRecord: true });
    const terminal = pty === undefined ? undefined : { ...pty, script: script ?? DEFAULT_PATHS.script! };
    const tag = `${prefix}-${randomUUID()}`;
    const mode: FollowMode = {
      // Not the request's `pty`: the backend starts `script` on pipes, and `script` makes the terminal.
      launch: { argv: backgroundArgv(shell, dir, command.argv, command.user, supervisor.argv, terminal), env: supervisor.env, cwd: supervisor.cwd, user: supervisor.user, stdin: false, id: supervisor.id },
      from: { stdout: 0, stderr: 0 },
      dropStderrBefore: 0,
      followerTag: tag,
      follower: this.#follower(dir, id, command.user, tag),
      terminalRecord: pty === undefined ? undefined : dir,
    };
    return { driver: new RemoteDriver(command, this.settings, id, undefined, mode), commandId: id };
  }

  async follow(commandId: string, replay: boolean): Promise<FollowedCommand> {
    if (!isRecordId(commandId)) throw new CommandNotFound(commandId);
    const dir = `${this.base}${commandId}`;
    const answer = await this.#ask(recordsArgv(this.settings.paths.shell, 'show', dir, commandId, replay ? '0' : '1'));
    if (answer.exitCode === 3) throw new CommandNotFound(commandId);
    if (answer.exitCode !== 0) throw new TransportError(`the record of background command ${commandId} could not be read (exit status ${answer.exitCode})`);
    const { offsets, account, argv, terminal } = parseShown(commandId, answer.stdout);
    this.handle.users.add(account);
    this.#accounts.set(commandId, account);
    const tag = `${this.handle.prefix}-${randomUUID()}`;
    const mode: FollowMode = {
      // Follow-only: standard output from its end now; standard error from its start, for the
      // supervisor's reports in it, with what the command wrote before now not delivered.
      from: { stdout: offsets.stdout, stderr: 0 },
      dropStderrBefore: offsets.stderr,
      followerTag: tag,
      follower: this.#follower(dir, commandId, account, tag),
      terminalRecord: terminal === undefined ? undefined : dir,
    };
    const spec: CommandSpec = { argv, env: {}, cwd: undefined, stdin: 'ignore', limits: undefined, user: account, pty: terminal };
    return { driver: new RemoteDriver(spec, this.settings, commandId, undefined, mode), argv, skipped: replay ? { stdout: 0, stderr: 0 } : undefined, terminal };
  }

  async list(): Promise<readonly CommandInfo[]> {
    const answer = await this.#ask(recordsArgv(this.settings.paths.shell, 'list', this.base));
    if (answer.exitCode !== 0) throw new TransportError(`the background commands could not be listed (exit status ${answer.exitCode})`);
    const listed: CommandInfo[] = [];
    for (const line of answer.stdout.split('\n')) {
      const match = /^(\S+) (running|ended) (?:-|(\d+)x(\d+)) (.*)$/.exec(line);
      if (match === null) continue;
      let argv: unknown;
      try {
        argv = JSON.parse(match[5]!);
      } catch {
        continue; // a record being removed as it was read
      }
      if (!Array.isArray(argv)) continue;
      const terminal = match[3] === undefined ? undefined : { cols: Number(match[3]), rows: Number(match[4]) };
      listed.push({ commandId: match[1]!, argv: argv as string[], state: match[2] as 'running' | 'ended', ...(terminal === undefined ? {} : { terminal }) });
    }
    return listed;
  }

  async forget(commandId: string): Promise<void> {
    if (!isRecordId(commandId)) return;
    const user = this.#accounts.get(commandId);
    await this.#repeat(async () => {
      const { exitCode } = await this.settings.transport.run(recordsArgv(this.settings.paths.shell, 'remove', `${this.base}${commandId}`), { user, timeoutMs: this.settings.requestTimeoutMs });
      if (exitCode !== 0) throw new Error(`removing the record ended with ${exitCode}`);
    });
    this.#accounts.delete(commandId);
  }

  /** The records of this handle's commands, at close (after the sweep ended them). */
  async removeOwn(user: string | undefined, timeoutMs: number): Promise<void> {
    if (!this.#started) return;
    const { exitCode } = await this.settings.transport.run(recordsArgv(this.settings.paths.shell, 'remove', `${this.base}${this.handle.prefix}-`), { user, timeoutMs });
    if (exitCode !== 0) throw new Error(`removing the records ended with exit status ${exitCode}`);
  }

  #repeat<T>(attempt: () => Promise<T>): Promise<T> {
    return retry({ ...this.settings.retry, deadlineMs: this.settings.retry.deadlineMs ?? this.settings.requestTimeoutMs }, attempt);
  }

  /** Runs a short program that reads records and gives what it printed; repeated on failure (it only reads). */
  #ask(argv: string[]): Promise<Answer> {
    return this.#repeat(
      () =>
        new Promise<Answer>((resolve, reject) => {
          const chunks: Buffer[] = [];
          const timer = setTimeout(() => {
            started.close();
            reject(new TransportError(`a records query took over ${this.settings.requestTimeoutMs} ms`));
          }, this.settings.requestTimeoutMs);
          const id = `${this.handle.prefix}-${randomUUID()}`;
          const started = this.settings.transport.start(
            { argv, env: { [TAG_VARIABLE]: id }, cwd: '/', user: undefined, stdin: false, id },
            {
              output: (stream, data) => {
                if (stream === 'stdout') chunks.push(Buffer.from(data));
              },
              end: (end) => {
                clearTimeout(timer);
                if (end.kind === 'exit') resolve({ exitCode: end.status?.exitCode, stdout: Buffer.concat(chunks).toString('utf8') });
                else if (end.kind === 'refused') reject(new TransportError(`a records query was refused: ${end.reason}`, { cause: end.error }));
                else reject(end.error instanceof SandstreamError ? end.error : new TransportError(`a records query failed: ${this.settings.describe?.(end.error) ?? String(end.error)}`, { cause: end.error }));
              },
            },
          );
        }),
    );
  }
}
