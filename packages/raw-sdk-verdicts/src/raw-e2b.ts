/**
 * The e2b SDK's own command API behind the Sandstream contract, with no fix
 * of ours: each call of the driver is the one SDK call that does that job,
 * with the SDK's defaults.
 *
 * - start: `sandbox.commands.run(shellLine(argv), { background: true, envs,
 *   cwd, user, stdin, onStdout, onStderr })` (the SDK runs the string with
 *   `/bin/bash -l -c`);
 * - output: the strings `onStdout`/`onStderr` receive, encoded back to UTF-8
 *   (the only way from the SDK's strings to the contract's bytes);
 * - exit: `handle.wait()`, its `exitCode` as it comes (a non-zero one
 *   arrives as the `CommandExitError` it throws), never a signal: the SDK
 *   reports none;
 * - every signal: `handle.kill()`, the SDK's only one (SIGKILL to the pid
 *   envd started);
 * - stdin: `handle.sendStdin(bytes)` and `handle.closeStdin()`;
 * - errors: the SDK's own, for the runtime to report (as `TransportError`).
 */
import { CommandExitError, type CommandHandle, type Sandbox as E2BSdkSandbox } from 'e2b';
import type { CapabilityManifest, Sandbox } from '@sandstream/types';
import { defineSandbox, type CommandSpec, type DriverEvents, type ProcessDriver, type StartedProcess } from '@sandstream/types/runtime';
import { shellLine } from './shell-line.js';

/** Options of {@link createRawE2BSandbox}. */
export interface RawE2BOptions {
  /** Whether the SDK's `user` option is advertised (the emulator switches accounts only as root). */
  readonly user: boolean;
  /** Time between SIGTERM and SIGKILL in the runtime's teardown, in ms (the runtime's default when omitted). */
  readonly graceMs?: number;
}

const encoder = new TextEncoder();

class RawE2BDriver implements ProcessDriver {
  private handle: CommandHandle | undefined;

  constructor(
    private readonly native: E2BSdkSandbox,
    private readonly command: CommandSpec,
  ) {}

  async start(events: DriverEvents): Promise<StartedProcess> {
    const { argv, env, cwd, user, stdin } = this.command;
    const handle = await this.native.commands.run(shellLine(argv), {
      background: true,
      envs: { ...env },
      ...(cwd === undefined ? {} : { cwd }),
      ...(user === undefined ? {} : { user }),
      stdin: stdin === 'pipe',
      onStdout: (data) => events.output('stdout', encoder.encode(data)),
      onStderr: (data) => events.output('stderr', encoder.encode(data)),
    });
    this.handle = handle;
    handle.wait().then(
      (result) => events.exit({ exitCode: result.exitCode, signal: null }),
      (error: unknown) => {
        if (error instanceof CommandExitError) events.exit({ exitCode: error.exitCode, signal: null });
        else events.fail(error instanceof Error ? error : new Error(String(error)));
      },
    );
    return { pid: handle.pid };
  }

  async writeStdin(data: Uint8Array): Promise<void> {
    await this.handle!.sendStdin(data);
  }

  async closeStdin(): Promise<void> {
    if (this.command.stdin === 'pipe') await this.handle!.closeStdin();
  }

  async signal(): Promise<void> {
    await this.handle!.kill();
  }
}

/**
 * A Sandstream sandbox over an e2b SDK sandbox the caller owns; `close()`
 * ends the commands it started (through the runtime) and leaves the sandbox.
 */
export function createRawE2BSandbox(native: E2BSdkSandbox, options: RawE2BOptions): Sandbox<E2BSdkSandbox> {
  const capabilities: CapabilityManifest = {
    streaming: true,
    stdin: true,
    // The SDK has no call for limits.
    'resource-limits': false,
    user: options.user,
    // What adapter-e2b states: envd's wire carries bytes.
    'binary-output': true,
  };
  return defineSandbox({
    name: 'raw-e2b',
    capabilities,
    native,
    ...(options.graceMs === undefined ? {} : { graceMs: options.graceMs }),
    createDriver: (command) => new RawE2BDriver(native, command),
  });
}
