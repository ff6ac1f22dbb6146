/**
 * `@vercel/sandbox`'s own command API behind the Sandstream contract, with
 * no fix of ours: each call of the driver is the one SDK call that does that
 * job, with the SDK's defaults.
 *
 * - start: `sandbox.runCommand({ cmd: argv[0], args: argv.slice(1), env,
 *   cwd, detached: true })` (the SDK takes argv as it is);
 * - output: the records of `command.logs()`, their `data` strings encoded
 *   back to UTF-8, read to the end;
 * - exit: then `command.wait()`, its `exitCode` as it comes, never a
 *   signal: the SDK reports none;
 * - signals: `command.kill(signal)`, the name passed as it is;
 * - stdin: none; the SDK (3.5.0) has no call for it, so the manifest says so;
 * - errors: the SDK's own, for the runtime to report (as `TransportError`).
 */
import { Sandbox as VercelSdkSandbox, type Command } from '@vercel/sandbox';
import { StdinClosed, type CapabilityManifest, type Sandbox } from '@sandstream/types';
import { defineSandbox, type CommandSpec, type DriverEvents, type ProcessDriver, type StartedProcess } from '@sandstream/types/runtime';

/** Options of {@link createRawVercelSandbox}. */
export interface RawVercelOptions {
  /** The SDK sandbox. */
  readonly native: VercelSdkSandbox;
  /** Whether `close()` stops the SDK sandbox (`native.stop()`), as for one this sandbox was created with. */
  readonly owned: boolean;
  /** Time between SIGTERM and SIGKILL in the runtime's teardown, in ms (the runtime's default when omitted). */
  readonly graceMs?: number;
}

type KillSignal = Parameters<Command['kill']>[0];

const encoder = new TextEncoder();

class RawVercelDriver implements ProcessDriver {
  private command: Command | undefined;

  constructor(
    private readonly native: VercelSdkSandbox,
    private readonly spec: CommandSpec,
  ) {}

  async start(events: DriverEvents): Promise<StartedProcess> {
    const { argv, env, cwd } = this.spec;
    const command = await this.native.runCommand({
      cmd: argv[0]!,
      args: argv.slice(1),
      env: { ...env },
      ...(cwd === undefined ? {} : { cwd }),
      detached: true,
    });
    this.command = command;
    void (async () => {
      for await (const log of command.logs()) events.output(log.stream, encoder.encode(log.data));
      const done = await command.wait();
      events.exit({ exitCode: done.exitCode, signal: null });
    })().catch((error: unknown) => events.fail(error instanceof Error ? error : new Error(String(error))));
    return { commandId: command.cmdId };
  }

  async writeStdin(): Promise<void> {
    throw new StdinClosed('@vercel/sandbox has no call for standard input');
  }

  async closeStdin(): Promise<void> {}

  async signal(signal: string): Promise<void> {
    await this.command!.kill(signal as KillSignal);
  }
}

/** A Sandstream sandbox over an `@vercel/sandbox` sandbox. */
export function createRawVercelSandbox(options: RawVercelOptions): Sandbox<VercelSdkSandbox> {
  const capabilities: CapabilityManifest = {
    streaming: true,
    stdin: false,
    'resource-limits': false,
    user: false,
    // What adapter-vercel states: the log stream is NDJSON text.
    'binary-output': false,
  };
  const { native, owned } = options;
  return defineSandbox({
    name: 'raw-vercel',
    capabilities,
    native,
    ...(options.graceMs === undefined ? {} : { graceMs: options.graceMs }),
    createDriver: (command) => new RawVercelDriver(native, command),
    async close() {
      if (owned) await native.stop();
    },
  });
}
