/** Defects of terminals (spec 1.5, SS-PTY-*): each the local adapter's terminal with one thing wrong. */
import type { Signal } from '@sandstream/types';
import type { DriverEvents, ProcessDriver } from '@sandstream/types/runtime';
import type { BrokenAdapter } from './adapter.js';
import { alterResult, delegateDriver, killGroup, mapDriverEvents, omit, wrapSandbox } from './wrap.js';

const SIGNAL_NUMBERS: Readonly<Record<string, number>> = { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGKILL: 9, SIGTERM: 15 };

/** Only a terminal's commands get the defect: the cases beside it run on pipes as before. */
const onTerminal =
  (defect: (driver: ProcessDriver) => ProcessDriver) =>
  (driver: ProcessDriver, command: { pty: unknown }): ProcessDriver =>
    command.pty === undefined ? driver : defect(driver);

/** Every signal of teardown is sent as SIGHUP: what hangs up a terminal, and nothing more. */
function hangUpOnly(driver: ProcessDriver): ProcessDriver {
  return delegateDriver(driver, { signal: (signal: Signal) => driver.signal(signal === 'SIGTERM' || signal === 'SIGKILL' ? 'SIGHUP' : signal) });
}

/** Signals reach the command's process group, not its session: a job in a group of its own is missed. */
function groupOnly(driver: ProcessDriver): ProcessDriver {
  let pid: number | undefined;
  return delegateDriver(driver, {
    async start(events) {
      const started = await driver.start(events);
      pid = started.pid;
      return started;
    },
    async signal(signal) {
      killGroup(pid, signal);
    },
  });
}

/** CR LF turned back into LF on the way out: the "cleaned-up" output of ADR-0052's option 2b. */
function normalisesNewlines(driver: ProcessDriver): ProcessDriver {
  return mapDriverEvents(driver, (events): DriverEvents => ({
    ...events,
    output: (stream, data) => events.output(stream, Uint8Array.from(Buffer.from(Buffer.from(data).toString('latin1').replaceAll('\r\n', '\n'), 'latin1'))),
  }));
}

/** The last chunk before the exit is dropped: the loss ADR-0053 measured when a terminal is read until its hang-up. */
function losesTail(driver: ProcessDriver): ProcessDriver {
  return mapDriverEvents(driver, (events): DriverEvents => {
    let held: Uint8Array | undefined;
    return {
      ...events,
      output: (stream, data) => {
        if (held !== undefined) events.output('stdout', held);
        held = Uint8Array.from(data);
      },
      exit: (status) => events.exit(status),
    };
  });
}

/** Typed end-of-file is swallowed: a write of nothing but 0x04 resolves without reaching the terminal. */
function swallowsEndOfFile(driver: ProcessDriver): ProcessDriver {
  return delegateDriver(driver, { writeStdin: (data) => (data.every((byte) => byte === 0x04) ? Promise.resolve() : driver.writeStdin(data)) });
}

/** resize() resolves without setting anything. */
function resizeIgnored(driver: ProcessDriver): ProcessDriver {
  return delegateDriver(driver, { resize: () => Promise.resolve() });
}

export const terminalAdapters: readonly BrokenAdapter[] = [
  {
    name: 'pty-hangs-up-only',
    defect: 'under a terminal, teardown sends SIGHUP where it should send SIGTERM and SIGKILL: a command ignoring SIGHUP outlives every exit path',
    needs: 'pty',
    create: (lab) => lab.driver(onTerminal(hangUpOnly), { killWaitMs: 1_000 }),
    caughtBy: { 'pty.session-ends': /still running/ },
    stillPasses: ['pty.terminal'],
  },
  {
    name: 'pty-signals-the-group',
    defect: "under a terminal, signals go to the command's process group and not its session: a job of an interactive shell, in a group of its own, survives",
    needs: 'pty',
    create: (lab) => lab.driver(onTerminal(groupOnly), { killWaitMs: 1_000 }),
    caughtBy: { 'pty.session-ends': /a job in a process group of its own/ },
    stillPasses: ['pty.terminal', 'pty.status'],
  },
  {
    name: 'pty-status-as-code',
    defect: 'a command on a terminal that a signal ended is reported as exit code 128+n, as script -e reports it',
    needs: 'pty',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        run: async (inner, argv, options) => {
          const result = await inner.run(argv, options);
          const number = result.signal === null ? undefined : SIGNAL_NUMBERS[result.signal];
          return options?.pty === undefined || number === undefined ? result : alterResult(result, { exitCode: 128 + number, signal: null });
        },
      }),
    caughtBy: { 'pty.status': /kill -INT \$\$ reported as exit code 130, signal null/ },
    stillPasses: ['pty.terminal'],
  },
  {
    name: 'pty-newlines-normalised',
    defect: "the terminal's CR LF is turned into LF before delivery",
    needs: 'pty',
    create: (lab) => lab.driver(onTerminal(normalisesNewlines)),
    caughtBy: { 'pty.one-stream': /what the terminal gave/ },
    stillPasses: ['pty.status'],
  },
  {
    name: 'pty-loses-tail',
    defect: "the terminal's last chunk before the exit is never delivered",
    needs: 'pty',
    create: (lab) => lab.driver(onTerminal(losesTail)),
    caughtBy: { 'pty.last-bytes': /the terminal delivered \d+ bytes of 2000003/ },
    stillPasses: ['pty.status'],
  },
  {
    name: 'pty-no-end-of-file',
    defect: 'typed end-of-file never reaches the terminal: cat waits for ever',
    needs: 'pty',
    create: (lab) => lab.driver(onTerminal(swallowsEndOfFile)),
    caughtBy: { 'pty.end-of-file': /never saw end-of-file/ },
    stillPasses: ['pty.status'],
  },
  {
    name: 'pty-resize-ignored',
    defect: 'resize() resolves without changing the size',
    needs: 'pty',
    create: (lab) => lab.driver(onTerminal(resizeIgnored)),
    caughtBy: { 'pty.resize': /after resize\(120, 40\): not there/ },
    stillPasses: ['pty.terminal'],
  },
  {
    name: 'pty-size-ignored',
    defect: 'every terminal is 80x24, whatever size was asked',
    needs: 'pty',
    create: (lab) => lab.driver((driver) => driver, { command: (command) => (command.pty === undefined ? command : { ...command, pty: { cols: 80, rows: 24 } }) }),
    caughtBy: { 'pty.terminal': /stty size/ },
    stillPasses: ['pty.status'],
  },
  {
    name: 'pty-on-pipes',
    defect: 'the pty option is accepted and the command runs on pipes',
    needs: 'pty',
    create: (lab) => lab.driver((driver) => driver, { command: (command) => ({ ...command, pty: undefined }) }),
    caughtBy: { 'pty.terminal': /isatty\(0\)/, 'pty.live': /grep's first line, while it still runs: not there/ },
  },
  {
    name: 'pty-unannounced',
    defect: 'the manifest has no pty, yet the pty option runs the command on a terminal',
    needs: 'pty',
    create: (lab) =>
      wrapSandbox(lab.local(), {
        capabilities: (inner) => ({ ...inner.capabilities, pty: false }),
      }),
    caughtBy: { 'capabilities.absent-pty': /expected an error with code CAPABILITY_NOT_SUPPORTED|expected a synchronous throw/ },
  },
  {
    name: 'pty-listed-without-terminal',
    defect: 'commands() lists a background command on a terminal without its size',
    needs: 'pty',
    create: (lab) => {
      const sandbox = lab.local();
      return Object.assign(Object.create(sandbox) as typeof sandbox, {
        commands: async () => (await sandbox.commands!()).map((info) => omit(info, 'terminal')),
      });
    },
    caughtBy: { 'pty.background': /the terminal commands\(\) lists for it/ },
  },
];
