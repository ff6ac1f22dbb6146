/**
 * `Sandbox` and `Process` over the testee protocol: the objects the engine,
 * the cases and their probes use, unchanged, so a verdict through a testee is
 * the engine's on the adapter's own behaviour (ADR-0038). Every call is
 * forwarded as the caller made it; nothing is answered from the kit's side.
 */
import type { BackgroundProcess, CapabilityManifest, CommandInfo, ExecResult, OutputChunk, Process, Sandbox, SandboxTermination, StdinWriter } from '@sandstream/types';
import { rebuildResult } from './errors.js';
import type { TesteeLink } from './link.js';
import type { ProcessInfo, ProcessProps, SandboxInfo } from './protocol.js';
import { CALLBACK_THROWS, decodeValue, encodeValue, type ValueHooks, type WireValue } from './values.js';

/** A Sandbox of the testee's. */
export interface BridgeSandbox extends Sandbox<{ readonly testeeSandbox: string }> {
  /** Its process ids (`p1`, ...) are the testee's: for the `sever` hook. */
  readonly processIdOf: (proc: Process) => string | undefined;
}

const processIds = new WeakMap<object, string>();

/** The id a bridged Process has in its testee, or undefined for any other Process. */
export function testeeProcessId(proc: object): string | undefined {
  return processIds.get(proc);
}

function hooksFor(link: TesteeLink): ValueHooks {
  return {
    fn: (fn) => ({ id: link.callback(fn as (...args: unknown[]) => unknown), throws: (fn as { [CALLBACK_THROWS]?: unknown })[CALLBACK_THROWS] === true }),
    signal: (signal) => {
      const id = link.callback(() => undefined);
      if (!signal.aborted) {
        signal.addEventListener('abort', () => void link.request('abort', { signal: id, reason: encodeValue(signal.reason) }).catch(() => undefined), { once: true });
      }
      return id;
    },
  };
}

/** Builds the bridged Sandbox the testee described in `info`. */
export function bridgeSandbox(link: TesteeLink, info: SandboxInfo): BridgeSandbox {
  const hooks = hooksFor(link);
  const sid = info.sandbox;
  const value = (wire: unknown): WireValue => encodeValue(wire, hooks);
  const sandbox: Record<string | symbol, unknown> = {
    name: decodeValue(info.name) as string,
    capabilities: decodeValue(info.capabilities) as CapabilityManifest,
    native: { testeeSandbox: sid },
    async run(argv: readonly string[], options?: unknown): Promise<ExecResult> {
      return rebuildResult(await link.request('run', { sandbox: sid, argv: value(argv), options: value(options) }));
    },
    stream(argv: readonly string[], options?: unknown): Process {
      const answer = link.requestSync('stream', { sandbox: sid, argv: value(argv), options: value(options) }) as ProcessInfo;
      return bridgeProcess(link, answer);
    },
    async close(): Promise<void> {
      await link.request('close', { sandbox: sid });
    },
    [Symbol.asyncDispose](): Promise<void> {
      return (sandbox['close'] as () => Promise<void>)();
    },
    processIdOf: (proc: Process) => processIds.get(proc),
  };
  const termination = decodeValue(info.termination ?? { $undefined: true }) as SandboxTermination | undefined;
  if (termination !== undefined) sandbox['termination'] = termination;
  if (info.methods.includes('attach')) {
    sandbox['attach'] = async (commandId: string, options?: unknown): Promise<BackgroundProcess> =>
      bridgeProcess(link, (await link.request('attach', { sandbox: sid, commandId: value(commandId), options: value(options) })) as ProcessInfo) as BackgroundProcess;
  }
  if (info.methods.includes('commands')) {
    sandbox['commands'] = async (): Promise<readonly CommandInfo[]> => (await link.request('commands', { sandbox: sid })) as CommandInfo[];
  }
  return sandbox as unknown as BridgeSandbox;
}

/** Builds the bridged Process the testee described in `info`. */
function bridgeProcess(link: TesteeLink, info: ProcessInfo): Process | BackgroundProcess {
  const pid = info.process;
  const props = (): ProcessProps => link.requestSync('props', { process: pid }) as ProcessProps;
  const call = async (op: 'started' | 'dispose' | 'detach' | 'end'): Promise<void> => {
    await link.request(op, { process: pid });
  };
  const stdin: StdinWriter | null = info.stdin
    ? {
        write: async (data) => {
          await link.request('write', { process: pid, data: encodeValue(data) });
        },
        end: () => call('end'),
        get closed() {
          return props().stdinClosed as boolean;
        },
      }
    : null;
  const proc: Record<string | symbol, unknown> = {
    id: decodeValue(info.id),
    argv: decodeValue(info.argv),
    stdin,
    get pid() {
      return props().pid;
    },
    get commandId() {
      return props().commandId;
    },
    get exited() {
      return props().exited;
    },
    [Symbol.asyncIterator](): AsyncIterator<OutputChunk, undefined> {
      const { iterator } = link.requestSync('iterate', { process: pid }) as { iterator: string };
      const step = async (op: 'next' | 'return'): Promise<IteratorResult<OutputChunk, undefined>> => {
        const answer = (await link.request(op, { iterator })) as { done: boolean; value: OutputChunk | undefined };
        return answer.done ? { done: true, value: undefined } : { done: false, value: answer.value! };
      };
      return { next: () => step('next'), return: () => step('return') };
    },
    started: () => call('started'),
    wait: async (): Promise<ExecResult> => rebuildResult(await link.request('wait', { process: pid })),
    kill: async (signal?: unknown): Promise<void> => {
      await link.request('kill', { process: pid, signal: encodeValue(signal) });
    },
    [Symbol.asyncDispose]: () => call('dispose'),
  };
  if (info.background) {
    Object.defineProperty(proc, 'skipped', { enumerable: true, get: () => props().skipped });
    proc['detach'] = () => call('detach');
  }
  processIds.set(proc, pid);
  return proc as unknown as Process;
}
