/**
 * The testee protocol's messages (spec 1.3, section 18; the JSON Schemas are
 * `TesteeRequest` and `TesteeLine` of `spec/1.3/testee.json`). One JSON
 * object a line on the testee's standard input (requests) and standard output
 * (answers and callback calls). The kit chooses every id.
 */
import type { TesteeHello, TesteeLine, TesteeProps, WireValue } from '@sandstream/types';

/** The protocol's own version; a testee states it in its hello, and the kit refuses one it does not speak. */
export const TESTEE_PROTOCOL = 1;

/**
 * Requests the testee must answer without waiting on any command's progress:
 * the kit blocks on them. `run`, `attach` and `commands` are answered in two
 * steps: at once, whether the call threw or returned (the cases tell a
 * synchronous throw from a rejection), and later, under the request's
 * `settle` id, how its promise settled. So are a Process's `started`, `wait`,
 * `kill`, `dispose`, `detach`, and its writer's `write` and `end`.
 */
export const SYNC_OPS = new Set(['stream', 'props', 'iterate', 'stdin', 'manifest', 'run', 'attach', 'commands', 'started', 'wait', 'kill', 'dispose', 'detach', 'write', 'end', 'resize']);

/**
 * The requests answered in two steps (see {@link SYNC_OPS}): every call of the
 * contract that returns a promise, but an iterator's `next` and `return`.
 */
export const TWO_STEP_OPS = new Set(['run', 'attach', 'commands', 'started', 'wait', 'kill', 'dispose', 'detach', 'write', 'end', 'resize']);

/** Every request the kit sends, by its `op`. */
export interface Requests {
  hello: { protocol: number; spec: string };
  open: Record<string, never>;
  observe: { sandbox: string };
  close: { sandbox: string };
  manifest: { sandbox: string };
  run: { sandbox: string; argv: WireValue; options: WireValue; settle: string };
  stream: { sandbox: string; argv: WireValue; options: WireValue };
  attach: { sandbox: string; commandId: WireValue; options: WireValue; settle: string };
  commands: { sandbox: string; settle: string };
  props: { process: string };
  stdin: { process: string };
  iterate: { process: string };
  next: { iterator: string };
  return: { iterator: string };
  started: { process: string; settle: string };
  wait: { process: string; settle: string };
  kill: { process: string; signal: WireValue; settle: string };
  dispose: { process: string; settle: string };
  detach: { process: string; settle: string };
  write: { process: string; data: WireValue; settle: string };
  end: { process: string; settle: string };
  resize: { process: string; cols: WireValue; rows: WireValue; settle: string };
  sever: { process: string };
  owner: { sandbox: string };
  abort: { signal: string; reason: WireValue };
  ping: Record<string, never>;
  bye: Record<string, never>;
}
export type Op = keyof Requests;

/** The ops of {@link TWO_STEP_OPS}. */
export type TwoStepOp = 'run' | 'attach' | 'commands' | 'started' | 'wait' | 'kill' | 'dispose' | 'detach' | 'write' | 'end' | 'resize';

/**
 * The answers' types below are as the kit reads them: the whole `value` of an
 * answer is decoded from the value form first.
 */

/** A request line. */
export type Request<K extends Op = Op> = { readonly id: string; readonly op: K } & Requests[K];

/** The hello's answer: what the testee is (the spec's `TesteeHello`). */
export type HelloAnswer = TesteeHello;

/** The answer to `open` and `observe`: a sandbox and what the kit reads of it without asking. */
export interface SandboxInfo {
  readonly sandbox: string;
  readonly name: WireValue;
  readonly capabilities: WireValue;
  readonly termination?: WireValue;
  /** Which of the optional methods the sandbox has: `attach`, `commands`. */
  readonly methods: readonly string[];
}

/** The answer to `stream` and `attach`: a Process and what never changes of it. */
export interface ProcessInfo {
  readonly process: string;
  readonly id: WireValue;
  readonly argv: WireValue;
  /** Whether it has `detach()` (a background Process). */
  readonly background: boolean;
  /** The contract's methods it lacks: `started`, `wait`, `kill`, `iterate`, `dispose`, and `resize` (optional, spec 1.5). */
  readonly lacks?: readonly string[];
  /** Whether it has a `then` member, which would make `await` unwrap it. */
  readonly thenable?: boolean;
}

/** The answer to `props`: what a Process shows at that moment (not its writer: `stdin` reads that, only when asked); also the `props` of an answer about a Process. */
export type ProcessProps = TesteeProps;

/** The answer to `stdin`: whether the Process has a writer now, and the writer's `closed`. */
export interface StdinProps {
  readonly writer: boolean;
  readonly closed?: WireValue;
}

/** A line the testee writes (the spec's `TesteeLine`). */
export type { TesteeLine };
