/**
 * `Sandbox` and `Process` over the testee protocol: the objects the engine,
 * the cases and their probes use, unchanged, so a verdict through a testee is
 * the engine's on the adapter's own behaviour (ADR-0038). Every call is
 * forwarded as the caller made it; nothing is answered from the kit's side.
 */
import type { BackgroundProcess, CapabilityManifest, CommandInfo, ExecResult, OutputChunk, Process, Sandbox, SandboxTermination, StdinWriter } from '@sandstream/types';
import { rebuildResult } from './errors.js';
import type { TesteeLink } from './link.js';
import type { ProcessInfo, ProcessProps, SandboxInfo, StdinProps } from './protocol.js';
import { CALLBACK_THROWS, encodeValue, type ValueHooks, type WireValue } from './values.js';

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
    name: info.name as string,
    // Read when asked: a manifest that changes is the adapter's failure, for the case to see.
    get capabilities(): CapabilityManifest {
      return link.requestSync('manifest', { sandbox: sid }) as CapabilityManifest;
    },
    native: { testeeSandbox: sid },
    // Not async: a run() that throws at once (the adapter's mistake) throws here too.
    run(argv: readonly string[], options?: unknown): Promise<ExecResult> {
      return link.requestTwoStep('run', { sandbox: sid, argv: value(argv), options: value(options) }).then(rebuildResult);
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
  const termination = info.termination as SandboxTermination | undefined;
  if (termination !== undefined) sandbox['termination'] = termination;
  if (info.methods.includes('attach')) {
    sandbox['attach'] = (commandId: string, options?: unknown): Promise<BackgroundProcess> =>
      link.requestTwoStep('attach', { sandbox: sid, commandId: value(commandId), options: value(options) }).then((answer) => bridgeProcess(link, answer as ProcessInfo) as BackgroundProcess);
  }
  if (info.methods.includes('commands')) {
    sandbox['commands'] = (): Promise<readonly CommandInfo[]> => link.requestTwoStep('commands', { sandbox: sid }) as Promise<CommandInfo[]>;
  }
  return sandbox as unknown as BridgeSandbox;
}

/** Builds the bridged Process the testee described in `info`. */
function bridgeProcess(link: TesteeLink, info: ProcessInfo): Process | BackgroundProcess {
  const pid = info.process;
  /**
   * The properties as the adapter showed them when the last awaited call
   * settled, until this turn of the event loop ends: a direct caller reads
   * them right after its `await`, before any event can change them. After
   * that turn, they are read from the testee when asked.
   */
  let settled: ProcessProps | undefined;
  const remember = (props: unknown): void => {
    const now = props as ProcessProps;
    settled = now;
    setImmediate(() => {
      if (settled === now) settled = undefined;
    });
  };
  const props = (): ProcessProps => settled ?? (link.requestSync('props', { process: pid }) as ProcessProps);
  // Not async: a call the adapter throws from at once (its mistake) throws here too, as it would directly.
  const call = (op: 'started' | 'dispose' | 'detach' | 'end'): Promise<void> => link.requestTwoStep(op, { process: pid }, remember).then(() => undefined);
  // The writer is read when first asked, as the caller would read it (an adapter's getter may act,
  // and start a lazy command); it is the Process's for its whole life (section 2.2), so once only.
  let writer: StdinWriter | null | undefined;
  const stdin = (): StdinWriter | null => {
    if (writer !== undefined) return writer;
    const now = link.requestSync('stdin', { process: pid }) as StdinProps;
    writer = !now.writer ? null : {
      write: (data) => link.requestTwoStep('write', { process: pid, data: encodeValue(data) }, remember).then(() => undefined),
      end: () => call('end'),
      get closed() {
        return (link.requestSync('stdin', { process: pid }) as StdinProps).closed as boolean;
      },
    };
    return writer;
  };
  const proc: Record<string | symbol, unknown> = {
    id: info.id,
    argv: info.argv,
    get stdin() {
      return stdin();
    },
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
        const answer = (await link.request(op, { iterator }, remember)) as { done: boolean; value: OutputChunk | undefined };
        return answer.done ? { done: true, value: undefined } : { done: false, value: answer.value! };
      };
      return { next: () => step('next'), return: () => step('return') };
    },
    started: () => call('started'),
    wait: (): Promise<ExecResult> => link.requestTwoStep('wait', { process: pid }, remember).then(rebuildResult),
    kill: (signal?: unknown): Promise<void> => link.requestTwoStep('kill', { process: pid, signal: encodeValue(signal) }, remember).then(() => undefined),
    resize: (cols: unknown, rows: unknown): Promise<void> =>
      link.requestTwoStep('resize', { process: pid, cols: encodeValue(cols), rows: encodeValue(rows) }, remember).then(() => undefined),
    [Symbol.asyncDispose]: () => call('dispose'),
  };
  if (info.background) {
    Object.defineProperty(proc, 'skipped', { enumerable: true, get: () => props().skipped });
    proc['detach'] = () => call('detach');
  }
  // The Process has the shape the adapter's has: a member it lacks is missing here too.
  const members = { started: 'started', wait: 'wait', kill: 'kill', iterate: Symbol.asyncIterator, dispose: Symbol.asyncDispose, resize: 'resize' } as const;
  for (const name of info.lacks ?? []) delete proc[members[name as keyof typeof members]];
  // A thenable Process is the adapter's failure; `await` must not unwrap this one, so its `then` is not callable.
  if (info.thenable === true) proc['then'] = undefined;
  processIds.set(proc, pid);
  return proc as unknown as Process;
}
