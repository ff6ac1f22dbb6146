/**
 * The lines the kit and its TypeScript testee really write, against the
 * protocol's JSON Schemas (spec 1.3 section 18, `testee.json`, generated from
 * the TypeBox definitions of @sandstream/types). The kit's own types of the
 * protocol are held to the schemas' static types, and a session of requests,
 * written as the bridge writes them (the kit's value encoder included), is
 * served by serveTestee over the local adapter: every request and every line
 * of the testee must validate, and the session shows the testee's side of the
 * framing, the answers, the concurrency, the values, the errors, the callbacks
 * and the end of input.
 */
import { spawn } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, test } from 'vitest';
import { createLocalSandbox } from '@sandstream/adapter-local';
import {
  SPEC_VERSION,
  TESTEE_SCHEMA_ID,
  buildTesteeDocument,
  serializeSpecDocument,
  testeeValidatorFor,
  type Process,
  type Sandbox,
  type TesteeHello,
  type TesteeLine,
  type TesteeOp,
  type TesteeParameters,
  type WireError,
  type WireValue,
} from '@sandstream/types';
import type { WireError as KitWireError } from '../src/testee/errors.js';
import type { HelloAnswer, Op, Requests, TesteeLine as KitTesteeLine, TwoStepOp } from '../src/testee/protocol.js';
import { serveTestee } from '../src/testee/serve.js';
import { encodeValue, type WireValue as KitWireValue } from '../src/testee/values.js';

// The kit's types of the protocol and the schemas' static types are one and the same: a type that
// drifted from the other fails to compile here.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const typesAgree: {
  ops: Same<Op, TesteeOp>;
  parameters: Same<{ [K in Op & TesteeOp]: Same<Requests[K], TesteeParameters<K>> }[Op & TesteeOp], true>;
  lines: Same<KitTesteeLine, TesteeLine>;
  hello: Same<HelloAnswer, TesteeHello>;
  errors: Same<KitWireError, WireError>;
  values: Same<KitWireValue, WireValue>;
} = { ops: true, parameters: true, lines: true, hello: true, errors: true, values: true };

const isRequest = testeeValidatorFor('TesteeRequest');
const isLine = testeeValidatorFor('TesteeLine');
const isHello = testeeValidatorFor('TesteeHello');

test('the schemas are the committed testee.json of the revision the kit checks', () => {
  expect(typesAgree).toEqual({ ops: true, parameters: true, lines: true, hello: true, errors: true, values: true });
  const committed = readFileSync(new URL(`../../../spec/${SPEC_VERSION}/testee.json`, import.meta.url), 'utf8');
  expect(committed).toBe(serializeSpecDocument(buildTesteeDocument()));
  expect(JSON.parse(committed).$id).toBe(TESTEE_SCHEMA_ID);
});

type Answer = Extract<TesteeLine, { id: string }>;

/** serveTestee on a pair of pipes, with every line either way checked against the schemas. */
class Session {
  readonly input = new PassThrough();
  readonly output = new PassThrough();
  /** Every line the testee wrote, parsed, in order. */
  readonly lines: unknown[] = [];
  /** Every line the testee wrote, as text. */
  readonly texts: string[] = [];
  readonly served: Promise<void>;
  #next = 0;
  #waiters = new Map<string, (line: Answer) => void>();

  constructor(factory: () => Sandbox | Promise<Sandbox>) {
    this.served = serveTestee({ factory }, this.input, this.output);
    createInterface({ input: this.output, crlfDelay: Infinity }).on('line', (text) => {
      this.texts.push(text);
      const line = JSON.parse(text) as unknown;
      this.lines.push(line);
      const id = (line as { id?: unknown }).id;
      if (typeof id === 'string') this.#waiters.get(id)?.(line as Answer);
    });
  }

  id(): string {
    return `r${++this.#next}`;
  }

  /** Writes a request as the bridge does, and resolves with its answer. */
  send<K extends Op>(op: K, params: Requests[K], id = this.id()): Promise<Answer> {
    const line = JSON.stringify({ id, op, ...params });
    const request = JSON.parse(line) as unknown;
    expect(isRequest(request), `${line}: ${JSON.stringify(isRequest.issues)}`).toBe(true);
    const answered = this.answer(id);
    this.input.write(`${line}\n`);
    return answered;
  }

  /** The answer to `id` (a request's, or a settle id's), once it is written. */
  answer(id: string): Promise<Answer> {
    const earlier = this.lines.find((line) => (line as { id?: unknown }).id === id);
    if (earlier !== undefined) return Promise.resolve(earlier as Answer);
    return new Promise((resolve) => this.#waiters.set(id, resolve));
  }

  /** A request's value, from an `ok: true` answer. */
  async value<K extends Op>(op: K, params: Requests[K]): Promise<WireValue | undefined> {
    const answer = await this.send(op, params);
    expect(answer, JSON.stringify(answer)).toMatchObject({ ok: true });
    return (answer as { value?: WireValue }).value;
  }

  /** A two-step request's settled value: its first answer says it returned, its settle id's answer is the value. */
  async settled<K extends TwoStepOp>(op: K, params: Omit<Requests[K], 'settle'>): Promise<WireValue | undefined> {
    const settle = this.id();
    const first = await this.send(op, { ...params, settle } as Requests[K]);
    expect(first, JSON.stringify(first)).toMatchObject({ ok: true, value: { returned: true } });
    const answer = await this.answer(settle);
    expect(answer, JSON.stringify(answer)).toMatchObject({ ok: true });
    return (answer as { value?: WireValue }).value;
  }

  /** Every line so far is a valid TesteeLine. */
  checkLines(): void {
    for (const line of this.lines) expect(isLine(line), `${JSON.stringify(line)}: ${JSON.stringify(isLine.issues)}`).toBe(true);
  }
}

/** The bridge's value encoder, with callbacks and signals given ids as the bridge gives them. */
function wire(value: unknown): WireValue {
  let n = 0;
  return encodeValue(value, { fn: () => ({ id: `c${++n}`, throws: false }), signal: () => `c${++n}` });
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('a session with the TypeScript testee over the local adapter', () => {
  test(
    'writes only lines the schemas accept, one JSON object a line, each request answered once [SS-TESTEE-1, SS-TESTEE-2, SS-TESTEE-6, SS-TESTEE-7, SS-TESTEE-8]',
    { timeout: 60_000 },
    async () => {
      const session = new Session(() => createLocalSandbox());
      const hello = await session.value('hello', { protocol: 1, spec: SPEC_VERSION });
      expect(isHello(hello), JSON.stringify(isHello.issues)).toBe(true);
      expect(hello).toMatchObject({ protocol: 1, spec: SPEC_VERSION, name: 'local' });

      const { sandbox } = (await session.value('open', {})) as { sandbox: string };
      expect(await session.value('manifest', { sandbox })).toMatchObject({ streaming: true, stdin: true });

      // A run with a callback: the call lines come before the answer that settles the run.
      const settle = session.id();
      const argv = ['sh', '-c', 'printf out; printf err >&2'];
      expect(await session.send('run', { sandbox, argv: wire(argv), options: wire({ onOutput: () => undefined, input: new Uint8Array([104, 105]) }), settle })).toMatchObject({ ok: true, value: { returned: true } });
      const settled = await session.answer(settle);
      expect(settled).toMatchObject({ ok: true, value: { exitCode: 0, stdout: { $bytes: 'b3V0' }, stderr: { $bytes: 'ZXJy' } } });
      const calls = session.lines.filter((line) => (line as { call?: unknown }).call === 'c1');
      expect(calls.length).toBeGreaterThanOrEqual(2);
      expect(session.lines.indexOf(calls.at(-1)!)).toBeLessThan(session.lines.indexOf(settled));

      // An invalid argument crosses as the caller gave it, and the adapter's error names its key.
      const bad = session.id();
      const first = await session.send('run', { sandbox, argv: wire(['true']), options: wire({ timeout: Number.NaN }), settle: bad });
      const refused = first.ok === false ? first : await session.answer(bad);
      expect(refused).toMatchObject({ ok: false, error: { name: 'InvalidArgument', code: 'INVALID_ARGUMENT', key: 'options.timeout' } });
      await expect(session.send('stream', { sandbox, argv: wire([Symbol('not an argument')]), options: wire(undefined) })).resolves.toMatchObject({
        ok: false,
        error: { code: 'INVALID_ARGUMENT' },
      });

      // A Process: its properties, its writer, its chunks and its end.
      const info = (await session.value('stream', { sandbox, argv: wire(['cat']), options: wire({ stdin: 'pipe' }) })) as { process: string };
      const process1 = info.process;
      expect(info).toMatchObject({ background: false, lacks: [], thenable: false });
      expect(await session.value('props', { process: process1 })).toMatchObject({ exited: false });
      expect(await session.value('stdin', { process: process1 })).toEqual({ writer: true, closed: false });
      expect(await session.settled('write', { process: process1, data: wire(new TextEncoder().encode('hi\n')) })).toBeNull();
      expect(await session.settled('end', { process: process1 })).toBeNull();
      const { iterator } = (await session.value('iterate', { process: process1 })) as { iterator: string };
      expect(await session.value('next', { iterator })).toEqual({ done: false, value: { stream: 'stdout', data: { $bytes: 'aGkK' } } });
      expect(await session.value('next', { iterator })).toEqual({ done: true, value: { $undefined: true } });
      expect(await session.settled('wait', { process: process1 })).toMatchObject({ exitCode: 0, streamed: true });
      expect(await session.settled('dispose', { process: process1 })).toBeNull();

      // A signal, aborted by its own request, and a kill with no signal named.
      const aborted = (await session.value('stream', { sandbox, argv: wire(['sleep', '30']), options: wire({ signal: new AbortController().signal }) })) as { process: string };
      expect(await session.value('abort', { signal: 'c1', reason: wire(undefined) })).toBeNull();
      const waitSettle = session.id();
      expect(await session.send('wait', { process: aborted.process, settle: waitSettle })).toMatchObject({ ok: true, value: { returned: true } });
      const ended = await session.answer(waitSettle);
      expect(ended.ok === true ? ended.value : (ended as { error: WireError }).error).toBeDefined();
      const killed = (await session.value('stream', { sandbox, argv: wire(['sleep', '30']), options: wire(undefined) })) as { process: string };
      expect(await session.settled('kill', { process: killed.process, signal: wire(undefined) })).toBeNull();
      expect(await session.settled('wait', { process: killed.process })).toMatchObject({ exitCode: null, signal: 'SIGTERM' });

      // A background command, listed and attached in two steps.
      const background = (await session.value('stream', { sandbox, argv: wire(['sleep', '30']), options: wire({ background: true }) })) as { process: string; id: WireValue };
      expect(background).toMatchObject({ background: true });
      expect(await session.settled('started', { process: background.process })).toBeNull();
      const { commandId } = (await session.value('props', { process: background.process })) as { commandId: string };
      const listed = session.id();
      expect(await session.send('commands', { sandbox, settle: listed })).toMatchObject({ ok: true, value: { returned: true } });
      expect(await session.answer(listed)).toMatchObject({ ok: true, value: [{ commandId }] });
      const attachedId = session.id();
      expect(await session.send('attach', { sandbox, commandId: wire(commandId), options: wire({ replay: false }), settle: attachedId })).toMatchObject({ ok: true, value: { returned: true } });
      expect(await session.answer(attachedId)).toMatchObject({ ok: true, value: { background: true } });
      expect(await session.settled('detach', { process: background.process })).toBeNull();
      const missing = session.id();
      await session.send('attach', { sandbox, commandId: wire('no-such-command'), options: wire(undefined), settle: missing });
      expect(await session.answer(missing)).toMatchObject({ ok: false, error: { code: 'COMMAND_NOT_FOUND', commandId: 'no-such-command' } });

      expect(await session.value('close', { sandbox })).toBeNull();
      expect(await session.value('bye', {})).toBeNull();
      await session.served;

      // One JSON object a line, nothing else on the testee's output, every line a valid TesteeLine.
      for (const text of session.texts) expect(text).toMatch(/^\{.*\}$/);
      session.checkLines();
      // Each id answered exactly once.
      const answered = session.lines.flatMap((line) => ((line as { id?: unknown }).id === undefined ? [] : [(line as { id: string }).id]));
      expect(answered.length).toBe(new Set(answered).size);
    },
  );

  test('answers later requests while a wait waits, and pulls nothing it was not asked for [SS-TESTEE-3, SS-TESTEE-4]', { timeout: 60_000 }, async () => {
    // Counts what the testee asks of its adapter: a chunk per `next`, `wait()` per `wait`.
    const asked = { next: 0, wait: 0 };
    const counting = (proc: Process): Process =>
      new Proxy(proc, {
        get(target, key) {
          if (key === Symbol.asyncIterator) {
            return () => {
              const it = target[Symbol.asyncIterator]();
              return {
                next: () => {
                  asked.next++;
                  return it.next();
                },
                return: () => it.return?.() ?? Promise.resolve({ done: true, value: undefined }),
              };
            };
          }
          if (key === 'wait') {
            return () => {
              asked.wait++;
              return target.wait();
            };
          }
          const member = Reflect.get(target, key, target) as unknown;
          return typeof member === 'function' ? (member as (...args: unknown[]) => unknown).bind(target) : member;
        },
      });
    const session = new Session(() => {
      const local = createLocalSandbox();
      return new Proxy(local, {
        get(target, key) {
          if (key === 'stream') return (argv: string[], options?: object) => counting(target.stream(argv, options));
          const member = Reflect.get(target, key, target) as unknown;
          return typeof member === 'function' ? (member as (...args: unknown[]) => unknown).bind(target) : member;
        },
      });
    });
    await session.value('hello', { protocol: 1, spec: SPEC_VERSION });
    const { sandbox } = (await session.value('open', {})) as { sandbox: string };
    const { process: slow } = (await session.value('stream', { sandbox, argv: wire(['sh', '-c', 'printf a; sleep 2; printf b']), options: wire(undefined) })) as { process: string };
    await session.value('props', { process: slow });
    await session.value('stdin', { process: slow });
    const { iterator } = (await session.value('iterate', { process: slow })) as { iterator: string };
    await sleep(300);
    expect(asked).toEqual({ next: 0, wait: 0 });

    // A wait that waits holds back no later answer.
    const waitSettle = session.id();
    await session.send('wait', { process: slow, settle: waitSettle });
    const waiting = session.answer(waitSettle);
    const pinged = await session.send('ping', {});
    expect(pinged).toEqual({ id: expect.any(String) as string, ok: true, value: null });
    const wait = await waiting;
    expect(session.lines.indexOf(pinged)).toBeLessThan(session.lines.indexOf(wait));
    expect(asked).toEqual({ next: 0, wait: 1 });
    await session.value('next', { iterator });
    expect(asked).toEqual({ next: 1, wait: 1 });

    await session.value('bye', {});
    await session.served;
    session.checkLines();
  });

  test('closes every sandbox it opened when its input ends, without a bye [SS-TESTEE-5]', { timeout: 60_000 }, async () => {
    const session = new Session(() => createLocalSandbox());
    await session.value('hello', { protocol: 1, spec: SPEC_VERSION });
    const pids: number[] = [];
    for (let i = 0; i < 2; i++) {
      const { sandbox } = (await session.value('open', {})) as { sandbox: string };
      const { process: proc } = (await session.value('stream', { sandbox, argv: wire(['sleep', '60']), options: wire(undefined) })) as { process: string };
      await session.settled('started', { process: proc });
      const { pid } = (await session.value('props', { process: proc })) as { pid: number };
      expect(alive(pid)).toBe(true);
      pids.push(pid);
    }
    session.input.end();
    await session.served;
    for (const pid of pids) expect(alive(pid), `pid ${pid}`).toBe(false);
    session.checkLines();
  });

  test('writes a fault line for what its adapter raised where no caller could catch it, naming the request, and goes on [SS-TESTEE-9]', { timeout: 60_000 }, async () => {
    // A process of its own, as a testee runs: serveTestee listens for unhandled rejections there.
    const cli = fileURLToPath(new URL('../dist/testee-cli.js', import.meta.url));
    const adapter = fileURLToPath(new URL('./fixtures/stray-rejection-adapter.mjs', import.meta.url));
    const child = spawn(process.execPath, [cli, adapter], { stdio: ['pipe', 'pipe', 'ignore'] });
    try {
      const lines: unknown[] = [];
      const texts: string[] = [];
      const waiters: Array<() => void> = [];
      createInterface({ input: child.stdout, crlfDelay: Infinity }).on('line', (text) => {
        texts.push(text);
        lines.push(JSON.parse(text));
        for (const wake of waiters.splice(0)) wake();
      });
      const until = async (found: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> => {
        for (;;) {
          const line = lines.find((candidate) => found(candidate as Record<string, unknown>));
          if (line !== undefined) return line as Record<string, unknown>;
          await new Promise<void>((wake) => waiters.push(wake));
        }
      };
      const send = <K extends Op>(id: string, op: K, params: Requests[K]): void => {
        const line = JSON.stringify({ id, op, ...params });
        expect(isRequest(JSON.parse(line)), line).toBe(true);
        child.stdin.write(`${line}\n`);
      };
      send('r1', 'hello', { protocol: 1, spec: SPEC_VERSION });
      await until((line) => line['id'] === 'r1');
      send('r2', 'open', {});
      const { sandbox } = (await until((line) => line['id'] === 'r2'))['value'] as { sandbox: string };
      send('r3', 'run', { sandbox, argv: wire(['true']), options: wire(undefined), settle: 'r4' });
      expect(await until((line) => line['id'] === 'r4')).toMatchObject({ ok: true, value: { exitCode: 0 } });
      const fault = await until((line) => 'fault' in line);
      expect(fault).toMatchObject({ kind: 'unhandled rejection', fault: { name: 'Error', message: 'a stray rejection after run() settled' } });
      expect(fault['requests']).toContain('r3');
      // The testee did not end: it still answers.
      send('r5', 'ping', {});
      expect(await until((line) => line['id'] === 'r5')).toEqual({ id: 'r5', ok: true, value: null });
      send('r6', 'bye', {});
      await until((line) => line['id'] === 'r6');
      for (const text of texts) expect(text).toMatch(/^\{.*\}$/);
      for (const line of lines) expect(isLine(line), `${JSON.stringify(line)}: ${JSON.stringify(isLine.issues)}`).toBe(true);
      child.stdin.end();
      const status = await new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      expect(status).toBe(0);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
