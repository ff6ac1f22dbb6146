/**
 * The TypeScript testee: serves any JavaScript adapter over the testee
 * protocol on this process's standard streams, so the kit's bridge checks it
 * as it would check an adapter in another language. It does only what the
 * kit asks, when it asks (no read-ahead: a chunk is pulled on `next`, and
 * `wait()` is called only on `wait`), so the verdicts are the adapter's.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { createInterface } from 'node:readline';
import { SPEC_VERSION, type Process, type Sandbox, type SandboxFactory } from '@sandstream/types';
import type { ConformanceHooks } from '../hooks.js';
import { CALLBACK_ID, encodeError } from './errors.js';
import { TESTEE_PROTOCOL, TWO_STEP_OPS, type HelloAnswer, type ProcessInfo, type Request, type SandboxInfo, type TesteeLine } from './protocol.js';
import { decodeValue, encodeValue, type WireValue } from './values.js';

/** What the testee serves: the adapter module's factory and hooks. */
export interface TesteeModule {
  /** Returns a fresh, isolated sandbox on every call (the module's default export). */
  readonly factory: SandboxFactory;
  /** The module's `conformanceHooks`: `setup` at the hello, `teardown` at the end, `attach`, `sever` and `owner` on the kit's request. */
  readonly hooks?: ConformanceHooks;
}

/** The members of a Process the contract requires to be functions, by the names `lacks` uses. */
const PROCESS_METHODS = { started: 'started', wait: 'wait', kill: 'kill', iterate: Symbol.asyncIterator, dispose: Symbol.asyncDispose, resize: 'resize' } as const;

/** A protocol mistake of the kit's (an unknown id): answered as an error with no code. */
class ProtocolMisuse extends Error {}

/**
 * Serves the protocol on `input` and `output` until `bye` or the end of
 * input; then closes every sandbox it opened and runs the teardown hook.
 * What the adapter raises where no caller can catch it is sent to the kit
 * as a fault, and the testee goes on. The `sandstream-testee` command is
 * this function over a module's default export and `conformanceHooks`.
 *
 * @example
 * ```ts
 * import { serveTestee } from '@sandstream/conformance';
 * import { createLocalSandbox } from '@sandstream/adapter-local';
 * await serveTestee({ factory: () => createLocalSandbox() });
 * ```
 */
export async function serveTestee(module: TesteeModule, input: NodeJS.ReadableStream = process.stdin, output: NodeJS.WritableStream = process.stdout): Promise<void> {
  const sandboxes = new Map<string, Sandbox>();
  const processes = new Map<string, Process>();
  const iterators = new Map<string, AsyncIterator<unknown>>();
  const iteratorProcess = new Map<string, string>();
  const signals = new Map<string, AbortController>();
  let next = 0;
  const newId = (prefix: string): string => `${prefix}${++next}`;
  const send = (line: TesteeLine): void => {
    output.write(`${JSON.stringify(line)}\n`);
  };

  const makers = {
    fn: (id: string, throws: boolean) =>
      (...args: unknown[]): void => {
        send({ call: id, args: args.map((arg) => encodeValue(arg)) });
        // The case marked its callback as one that throws: the adapter must see the throw now.
        if (throws) throw Object.assign(new Error('the callback threw'), { [CALLBACK_ID]: id });
      },
    signal: (id: string, aborted: boolean, reason: unknown): AbortSignal => {
      const controller = new AbortController();
      if (aborted) controller.abort(reason);
      signals.set(id, controller);
      return controller.signal;
    },
  };
  const arg = (wire: WireValue): unknown => decodeValue(wire, makers);
  const sandboxOf = (id: string): Sandbox => {
    const sandbox = sandboxes.get(id);
    if (sandbox === undefined) throw new ProtocolMisuse(`no sandbox ${id}`);
    return sandbox;
  };
  const processOf = (id: string): Process => {
    const proc = processes.get(id);
    if (proc === undefined) throw new ProtocolMisuse(`no process ${id}`);
    return proc;
  };
  const describeSandbox = (sandbox: Sandbox): SandboxInfo => {
    const id = newId('s');
    sandboxes.set(id, sandbox);
    const methods = (['attach', 'commands'] as const).filter((name) => typeof sandbox[name] === 'function');
    return { sandbox: id, name: encodeValue(sandbox.name), capabilities: encodeValue(sandbox.capabilities), termination: encodeValue(sandbox.termination), methods };
  };
  const describeProcess = (proc: Process): ProcessInfo => {
    const id = newId('p');
    processes.set(id, proc);
    const members = proc as unknown as Record<string | symbol, unknown>;
    const lacks = Object.entries(PROCESS_METHODS).filter(([, key]) => typeof members[key] !== 'function').map(([name]) => name);
    return { process: id, id: encodeValue(proc.id), argv: encodeValue(proc.argv), background: typeof members['detach'] === 'function', lacks, thenable: 'then' in proc };
  };

  const handlers: { [K in Request['op']]: (request: Request<K>) => unknown } = {
    hello: async () => {
      await module.hooks?.setup?.();
      const probe = await module.factory();
      try {
        const answer: HelloAnswer = {
          protocol: TESTEE_PROTOCOL,
          spec: SPEC_VERSION,
          name: typeof probe.name === 'string' ? probe.name : 'unnamed',
          manifest: encodeValue(probe.capabilities),
          termination: encodeValue(probe.termination),
          hooks: (['attach', 'sever', 'owner'] as const).filter((name) => typeof module.hooks?.[name] === 'function'),
          pid: process.pid,
        };
        return answer;
      } finally {
        await probe.close();
      }
    },
    open: async () => describeSandbox(await module.factory()),
    observe: async ({ sandbox }) => describeSandbox(await module.hooks!.attach!(sandboxOf(sandbox))),
    close: async ({ sandbox }) => {
      await sandboxOf(sandbox).close();
      return null;
    },
    manifest: ({ sandbox }) => encodeValue(sandboxOf(sandbox).capabilities),
    run: ({ sandbox, argv, options }) => twoStep(() => sandboxOf(sandbox).run(arg(argv) as string[], arg(options) as never), encodeValue),
    stream: ({ sandbox, argv, options }) => describeProcess(sandboxOf(sandbox).stream(arg(argv) as string[], arg(options) as never)),
    attach: ({ sandbox, commandId, options }) => twoStep(() => sandboxOf(sandbox).attach!(arg(commandId) as string, arg(options) as never), (proc) => describeProcess(proc as Process)),
    commands: ({ sandbox }) => twoStep(() => sandboxOf(sandbox).commands!(), encodeValue),
    props: ({ process: id }) => propsOf(processOf(id)),
    stdin: ({ process: id }) => {
      const writer = processOf(id).stdin;
      return writer === null || writer === undefined ? { writer: false } : { writer: true, closed: encodeValue(writer.closed) };
    },
    iterate: ({ process: id }) => {
      const iterator = processOf(id)[Symbol.asyncIterator]();
      const key = newId('i');
      iterators.set(key, iterator);
      iteratorProcess.set(key, id);
      return { iterator: key };
    },
    next: async ({ iterator }) => {
      const step = await iteratorOf(iterator).next();
      return { done: step.done === true, value: encodeValue(step.value) };
    },
    return: async ({ iterator }) => {
      const it = iteratorOf(iterator);
      const step = it.return === undefined ? { done: true, value: undefined } : await it.return();
      return { done: step.done === true, value: encodeValue(step.value) };
    },
    started: ({ process: id }) => twoStep(() => processOf(id).started(), () => null),
    wait: ({ process: id }) => twoStep(() => processOf(id).wait(), encodeValue),
    kill: ({ process: id, signal }) => twoStep(() => processOf(id).kill(arg(signal) as never), () => null),
    dispose: ({ process: id }) => twoStep(() => processOf(id)[Symbol.asyncDispose](), () => null),
    detach: ({ process: id }) => twoStep(() => (processOf(id) as Process & { detach(): Promise<void> }).detach(), () => null),
    write: ({ process: id, data }) => twoStep(() => processOf(id).stdin!.write(arg(data) as Uint8Array), () => null),
    end: ({ process: id }) => twoStep(() => processOf(id).stdin!.end(), () => null),
    resize: ({ process: id, cols, rows }) => twoStep(() => processOf(id).resize!(arg(cols) as number, arg(rows) as number), () => null),
    sever: async ({ process: id }) => encodeValue(await module.hooks!.sever!(processOf(id) as never)),
    // The module's `owner` hook answers how a second instance of this testee reaches the sandbox's
    // environment; its `module` has no use here: the second process is this testee again.
    owner: async ({ sandbox }) => encodeValue((await module.hooks!.owner!(sandboxOf(sandbox)))?.env ?? null),
    abort: ({ signal, reason }) => {
      signals.get(signal)?.abort(arg(reason));
      return null;
    },
    ping: () => null,
    // Answered once everything is closed and the teardown hook ran: a teardown that fails is the
    // answer's error, as it is a harness error of a direct run.
    bye: async () => {
      await finish();
      return null;
    },
  };
  // Whatever the kit left open ends here, bye or not: the testee's sandboxes never outlive it.
  let finishing: Promise<void> | undefined;
  const finish = (): Promise<void> =>
    (finishing ??= (async () => {
      await Promise.allSettled([...sandboxes.values()].map((sandbox) => sandbox.close()));
      await module.hooks?.teardown?.();
    })());
  /**
   * The first step of a two-step request: the call is made now, and a throw
   * answers the request itself. What it returned settles later, under the
   * request's `settle` id; the first answer says only that it returned.
   */
  let settling: ((value: unknown) => void) | undefined;
  function twoStep(call: () => unknown, encode: (value: never) => unknown): { returned: true } {
    const returned = call();
    settling?.(Promise.resolve(returned).then((value) => encode(value as never)));
    return { returned: true };
  }
  function propsOf(proc: Process): { pid: WireValue; commandId: WireValue; exited: WireValue; skipped: WireValue } {
    const { pid, commandId, exited, skipped } = proc as Process & { skipped?: unknown };
    return { pid: encodeValue(pid), commandId: encodeValue(commandId), exited: encodeValue(exited), skipped: encodeValue(skipped) };
  }
  function iteratorOf(id: string): AsyncIterator<unknown> {
    const it = iterators.get(id);
    if (it === undefined) throw new ProtocolMisuse(`no iterator ${id}`);
    return it;
  }

  /**
   * Answers `id` with what `work` returns or throws, once it settles. `about`
   * is the Process the request concerns: its properties at the moment the
   * call settled go with the answer (`props`), so the kit reads them as a
   * direct caller would right after its `await`, before anything else ran.
   */
  const answer = (id: string, work: () => unknown, about?: Process): Promise<void> => {
    const props = (): { props?: ReturnType<typeof propsOf> } => {
      if (about === undefined) return {};
      try {
        return { props: propsOf(about) };
      } catch {
        // A getter that throws is read, and judged, when the kit reads it: no snapshot then.
        return {};
      }
    };
    let value: unknown;
    try {
      value = work();
    } catch (error) {
      send({ id, ok: false, error: encodeError(error), ...props() });
      return Promise.resolve();
    }
    if (value instanceof Promise) {
      return value.then(
        (resolved: unknown) => send({ id, ok: true, value: resolved as WireValue, ...props() }),
        (error: unknown) => send({ id, ok: false, error: encodeError(error), ...props() }),
      );
    }
    send({ id, ok: true, value: value as WireValue, ...props() });
    return Promise.resolve();
  };
  /** The Process a request names, if it names one that exists. */
  const concerns = (request: Request): Process | undefined => {
    const named = request as { process?: unknown; iterator?: unknown };
    const id = typeof named.process === 'string' ? named.process : typeof named.iterator === 'string' ? iteratorProcess.get(named.iterator) : undefined;
    return id === undefined || request.op === 'props' ? undefined : processes.get(id);
  };

  // Every request's work runs in a scope that names it, so a fault its work raises later names it too.
  const scope = new AsyncLocalStorage<string>();
  const onFault = (kind: 'uncaught exception' | 'unhandled rejection') => (error: unknown) => {
    const request = scope.getStore();
    send({ fault: encodeError(error), kind, requests: request === undefined ? [] : [request] });
  };
  const onUncaught = onFault('uncaught exception');
  const onRejection = onFault('unhandled rejection');
  process.on('uncaughtException', onUncaught);
  process.on('unhandledRejection', onRejection);

  const lines = createInterface({ input, crlfDelay: Infinity });
  let bye = false;
  // The bye's answer is written once everything is closed; the process must not end before it is.
  let byeAnswered: Promise<void> = Promise.resolve();
  for await (const line of lines) {
    if (line.trim() === '') continue;
    const request = JSON.parse(line) as Request & { settle?: string };
    const handler = handlers[request.op] as ((request: Request) => unknown) | undefined;
    scope.run(request.id, () => {
      const settle = TWO_STEP_OPS.has(request.op) ? request.settle : undefined;
      const about = concerns(request);
      if (settle !== undefined) settling = (value) => void answer(settle, () => value, about);
      try {
        const answered = answer(
          request.id,
          () => {
            if (handler === undefined) throw new ProtocolMisuse(`unknown op ${JSON.stringify(request.op)}`);
            return handler(request);
          },
          about,
        );
        if (request.op === 'bye') byeAnswered = answered;
      } finally {
        settling = undefined;
      }
    });
    if (request.op === 'bye') {
      bye = true;
      break;
    }
  }
  lines.close();
  await finish().catch((error: unknown) => {
    // After a bye its answer carried this; without one, standard error is all that is left.
    if (!bye) process.stderr.write(`sandstream-testee: the teardown hook failed: ${String(error)}\n`);
  });
  await byeAnswered;
  process.off('uncaughtException', onUncaught);
  process.off('unhandledRejection', onRejection);
  void bye;
}
