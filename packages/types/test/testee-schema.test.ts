// The testee protocol's schemas (spec section 18, testee.json) against lines
// written by hand with their static types: every request the kit sends, the
// answers and calls a testee writes, every value form, and lines that must be
// refused, each with the exact error.
import { describe, expect, it } from 'vitest';
import { TESTEE_OPS, type TesteeDefinitionName, type TesteeHello, type TesteeLine, type TesteeRequest, type WireError, type WireValue } from '../src/schema/testee.js';
import { testeeValidatorFor } from '../src/validators.js';

interface Issue {
  readonly instancePath: string;
  readonly keyword: string;
  readonly message: string;
}

/** Validates `value` as `name`; the issues, empty when it is valid. */
function issues(name: TesteeDefinitionName, value: unknown): Issue[] {
  const validate = testeeValidatorFor(name);
  return validate(value) ? [] : [...validate.issues];
}

/** A line as it crosses the pipe: JSON text, parsed back. */
const line = (message: unknown): unknown => JSON.parse(JSON.stringify(message));

const hello: TesteeHello = {
  protocol: 1,
  spec: '1.3',
  name: 'local',
  manifest: { streaming: true, stdin: true, 'resource-limits': true, user: false, attach: true, 'replay-tail': true },
  termination: { graceMs: 2000, killWaitMs: 5000 },
  hooks: ['attach', 'sever'],
  pid: 4101,
};

const result: WireValue = {
  exitCode: 0,
  signal: null,
  stdout: { $bytes: 'aGkK' },
  stderr: { $bytes: '' },
  streamed: false,
  timedOut: false,
  stdoutTruncated: false,
  stderrTruncated: false,
  durationMs: 12.5,
};

const VALUES: ReadonlyArray<[string, WireValue]> = [
  ['null', null],
  ['a boolean', false],
  ['a finite number', -1.5],
  ['a string', '$not-a-form'],
  ['an array of values', ['sh', '-c', 'echo hi']],
  ['a plain object', { timeout: 1000, env: { PATH: '/bin' }, '': 1 }],
  ['bytes', { $bytes: 'AAEC/w==' }],
  ['no bytes', { $bytes: '' }],
  ['undefined', { $undefined: true }],
  ['NaN', { $number: 'NaN' }],
  ['minus infinity', { $number: '-Infinity' }],
  ['a bigint', { $bigint: '-12345678901234567890' }],
  ['a callback', { $function: 'c1', throws: true }],
  ['a signal not yet aborted', { $signal: 'c2', aborted: false, reason: null }],
  ['an aborted signal', { $signal: 'c3', aborted: true, reason: { $other: 'DOMException: This operation was aborted' } }],
  ['a symbol', { $other: 'Symbol(argv)' }],
  ['an object with $ keys', { $object: { $bytes: 'not a form here', nested: { $undefined: true } } }],
  ['an options object holding forms', { onOutput: 'not a function', signal: { $signal: 'c4', aborted: false, reason: null }, timeout: { $number: 'NaN' }, input: { $bytes: 'aGk=' } }],
];

describe('testee.json: what the kit writes', () => {
  const ids = (() => {
    let n = 0;
    return () => `r${++n}`;
  })();
  const v: WireValue = { $undefined: true };
  const requests: TesteeRequest[] = [
    { id: ids(), op: 'hello', protocol: 1, spec: '1.3' },
    { id: ids(), op: 'open' },
    { id: ids(), op: 'observe', sandbox: 's1' },
    { id: ids(), op: 'owner', sandbox: 's1' },
    { id: ids(), op: 'close', sandbox: 's1' },
    { id: ids(), op: 'manifest', sandbox: 's1' },
    { id: ids(), op: 'run', sandbox: 's1', argv: ['echo', 'hi'], options: { input: { $bytes: 'aGk=' }, onOutput: { $function: 'c1', throws: false } }, settle: ids() },
    { id: ids(), op: 'stream', sandbox: 's1', argv: ['sh', '-c', 'sleep 1'], options: v },
    { id: ids(), op: 'attach', sandbox: 's1', commandId: 'cmd-1', options: { replay: true }, settle: ids() },
    { id: ids(), op: 'commands', sandbox: 's1', settle: ids() },
    { id: ids(), op: 'props', process: 'p2' },
    { id: ids(), op: 'stdin', process: 'p2' },
    { id: ids(), op: 'iterate', process: 'p2' },
    { id: ids(), op: 'next', iterator: 'i3' },
    { id: ids(), op: 'return', iterator: 'i3' },
    { id: ids(), op: 'started', process: 'p2', settle: ids() },
    { id: ids(), op: 'wait', process: 'p2', settle: ids() },
    { id: ids(), op: 'kill', process: 'p2', signal: v, settle: ids() },
    { id: ids(), op: 'dispose', process: 'p2', settle: ids() },
    { id: ids(), op: 'detach', process: 'p2', settle: ids() },
    { id: ids(), op: 'write', process: 'p2', data: { $bytes: 'aGkK' }, settle: ids() },
    { id: ids(), op: 'end', process: 'p2', settle: ids() },
    { id: ids(), op: 'resize', process: 'p2', cols: 120, rows: { $number: 'NaN' }, settle: ids() },
    { id: ids(), op: 'sever', process: 'p2' },
    { id: ids(), op: 'abort', signal: 'c4', reason: { $undefined: true } },
    { id: 'ping-1234', op: 'ping' },
    { id: ids(), op: 'bye' },
  ];

  it('has a request of every op of section 18.2', () => {
    expect(requests.map((request) => request.op).sort()).toEqual([...TESTEE_OPS].sort());
  });

  it.each(requests.map((request) => [request.op, request] as const))('%s is a valid TesteeRequest', (_op, request) => {
    expect(issues('TesteeRequest', line(request))).toEqual([]);
  });

  it('lets a request carry properties the section does not name (SS-TESTEE-1)', () => {
    expect(issues('TesteeRequest', { id: 'r1', op: 'wait', process: 'p1', settle: 'r2', deadline: 5 })).toEqual([]);
  });

  it.each(VALUES)('carries %s in the value form', (_what, value) => {
    expect(issues('WireValue', line(value))).toEqual([]);
    expect(issues('TesteeRequest', line({ id: 'r1', op: 'write', process: 'p1', data: value, settle: 'r2' }))).toEqual([]);
  });
});

describe('testee.json: what a testee writes', () => {
  const invalidArgument: WireError = { name: 'InvalidArgument', message: 'options.timeout: must be a finite number', code: 'INVALID_ARGUMENT', key: 'options.timeout', reason: 'must be a finite number' };
  const callbackFailed: WireError = {
    name: 'CallbackFailed',
    message: 'onOutput threw',
    code: 'CALLBACK_FAILED',
    result,
    cause: { name: 'Error', message: 'the callback threw', callback: 'c1' },
  };
  const lines: ReadonlyArray<[string, TesteeLine]> = [
    ['the hello answer', { id: 'r1', ok: true, value: hello as unknown as WireValue }],
    ['an open answer', { id: 'r2', ok: true, value: { sandbox: 's1', name: 'local', capabilities: hello.manifest, termination: { $undefined: true }, methods: ['attach', 'commands'] } }],
    ['a stream answer', { id: 'r3', ok: true, value: { process: 'p2', id: 'local-7', argv: ['sleep', '1'], background: false, lacks: [], thenable: false } }],
    ['a props answer', { id: 'r4', ok: true, value: { pid: 4242, commandId: '4242', exited: false, skipped: { $undefined: true } } }],
    ['a stdin answer', { id: 'r4', ok: true, value: { writer: true, closed: false } }],
    ['the first step of a run', { id: 'r4', ok: true, value: { returned: true } }],
    ['a next answer', { id: 'r5', ok: true, value: { done: false, value: { stream: 'stdout', data: { $bytes: 'aGkK' } } } }],
    ['the end of an iteration', { id: 'r6', ok: true, value: { done: true, value: { $undefined: true } } }],
    ['a wait answer', { id: 'r7', ok: true, value: result }],
    ['a null answer', { id: 'r8', ok: true, value: null }],
    ['an answer without a value', { id: 'r9', ok: true }],
    ['a contract error', { id: 'r10', ok: false, error: invalidArgument }],
    ['a capability error', { id: 'r11', ok: false, error: { name: 'CapabilityNotSupported', message: 'no attach', code: 'CAPABILITY_NOT_SUPPORTED', capability: 'attach', operation: 'attach()' } }],
    ['a callback failure with its partial result and cause', { id: 'r12', ok: false, error: callbackFailed }],
    ['a spawn failure', { id: 'r13', ok: false, error: { name: 'SpawnFailed', message: 'no such file', code: 'SPAWN_FAILED', argv: ['nope'] } }],
    ['an error that is not the contract\'s', { id: 'r14', ok: false, error: { name: 'TypeError', message: 'x is not a function' } }],
    ['a thrown value that is not an error', { id: 'r15', ok: false, error: { name: 'NonError', message: 'Symbol(x)', thrown: { $other: 'Symbol(x)' } } }],
    ['an error with its stack', { id: 'r15', ok: false, error: { name: 'TypeError', message: 'boom', stack: 'TypeError: boom\n    at run (adapter.js:1:1)' } }],
    ['a suppressed error', { id: 'r16', ok: false, error: { name: 'SuppressedError', message: 'two', error: invalidArgument, suppressed: { name: 'Error', message: 'cleanup' } } }],
    ['a callback call', { call: 'c1', args: [{ stream: 'stderr', data: { $bytes: '/w==' } }] }],
    ['a callback call without arguments', { call: 'c1', args: [] }],
    ['a fault of a request\'s work', { fault: { name: 'TypeError', message: 'late', stack: 'TypeError: late' }, kind: 'unhandled rejection', requests: ['r7'] }],
    ['a fault no request can be named for', { fault: { name: 'Error', message: 'stray' }, kind: 'uncaught exception', requests: [] }],
  ];

  it.each(lines)('%s is a valid TesteeLine', (_what, message) => {
    expect(issues('TesteeLine', line(message))).toEqual([]);
  });

  it('reads the hello answer as a TesteeHello', () => {
    expect(issues('TesteeHello', line(hello))).toEqual([]);
    expect(issues('TesteeHello', line({ protocol: 1, spec: '1.3', name: 'minimal', manifest: { streaming: false, stdin: false, 'resource-limits': false, user: false } }))).toEqual([]);
  });

  it('lets a line carry properties the section does not name (SS-TESTEE-1)', () => {
    expect(issues('TesteeLine', { id: 'r1', ok: true, value: null, elapsedMs: 3 })).toEqual([]);
    expect(issues('TesteeLine', { call: 'c1', args: [], at: 'x' })).toEqual([]);
    expect(issues('WireError', { name: 'Error', message: 'm', errno: -2 })).toEqual([]);
    expect(issues('TesteeLine', { fault: { name: 'Error', message: 'm' }, kind: 'uncaught exception', requests: [], pid: 7 })).toEqual([]);
  });
});

describe('testee.json: what it refuses', () => {
  it('an ok: false answer without an error object (SS-TESTEE-2)', () => {
    expect(issues('TesteeLine', { id: 'r1', ok: false })).toEqual([
      { instancePath: '', keyword: 'required', message: "must have required property 'error'" },
      { instancePath: '', keyword: 'if', message: 'must match "then" schema' },
      { instancePath: '', keyword: 'if', message: 'must match "else" schema' },
      { instancePath: '', keyword: 'if', message: 'must match "else" schema' },
    ]);
  });

  it('an answer whose ok is not a boolean', () => {
    expect(issues('TesteeLine', { id: 'r1', ok: 'yes', value: 1 })).toEqual([
      { instancePath: '/ok', keyword: 'type', message: 'must be boolean' },
      { instancePath: '', keyword: 'if', message: 'must match "else" schema' },
      { instancePath: '', keyword: 'if', message: 'must match "else" schema' },
    ]);
  });

  it('a line that is neither an answer, a call nor a fault', () => {
    expect(issues('TesteeLine', { result: 'done' })).toEqual([
      { instancePath: '', keyword: 'required', message: "must have required property 'id'" },
      { instancePath: '', keyword: 'required', message: "must have required property 'ok'" },
      { instancePath: '', keyword: 'if', message: 'must match "else" schema' },
      { instancePath: '', keyword: 'if', message: 'must match "else" schema' },
    ]);
    expect(issues('TesteeLine', ['r1', true])).toEqual([{ instancePath: '', keyword: 'type', message: 'must be object' }]);
  });

  it('a fault without its kind, or of a kind section 18.4 does not name', () => {
    expect(issues('TesteeLine', { fault: { name: 'Error', message: 'm' }, requests: [] })).toEqual([
      { instancePath: '', keyword: 'required', message: "must have required property 'kind'" },
      { instancePath: '', keyword: 'if', message: 'must match "then" schema' },
      { instancePath: '', keyword: 'if', message: 'must match "else" schema' },
    ]);
    expect(issues('TesteeLine', { fault: { name: 'Error', message: 'm' }, kind: 'panic', requests: ['r1'] })).toEqual([
      { instancePath: '/kind', keyword: 'enum', message: 'must be equal to one of the allowed values' },
      { instancePath: '', keyword: 'if', message: 'must match "then" schema' },
      { instancePath: '', keyword: 'if', message: 'must match "else" schema' },
    ]);
  });

  it('a call without its arguments', () => {
    expect(issues('TesteeLine', { call: 'c1' })).toEqual([
      { instancePath: '', keyword: 'required', message: "must have required property 'args'" },
      { instancePath: '', keyword: 'if', message: 'must match "then" schema' },
    ]);
  });

  it('an error without a message', () => {
    expect(issues('TesteeLine', { id: 'r1', ok: false, error: { name: 'Error', code: 'TRANSPORT' } })).toEqual([
      { instancePath: '/error', keyword: 'required', message: "must have required property 'message'" },
      { instancePath: '', keyword: 'if', message: 'must match "then" schema' },
      { instancePath: '', keyword: 'if', message: 'must match "else" schema' },
      { instancePath: '', keyword: 'if', message: 'must match "else" schema' },
    ]);
  });

  it('a request of an op section 18.2 does not define', () => {
    expect(issues('TesteeRequest', { id: 'r1', op: 'launch', sandbox: 's1' })).toEqual([
      { instancePath: '/op', keyword: 'enum', message: 'must be equal to one of the allowed values' },
    ]);
  });

  it('a request without a parameter of its op', () => {
    expect(issues('TesteeRequest', { id: 'r1', op: 'run', sandbox: 's1', argv: ['true'], settle: 'r2' })).toEqual([
      { instancePath: '', keyword: 'required', message: "must have required property 'options'" },
      { instancePath: '', keyword: 'if', message: 'must match "then" schema' },
    ]);
    // A request of two steps names its second id.
    expect(issues('TesteeRequest', { id: 'r1', op: 'commands', sandbox: 's1' })).toEqual([
      { instancePath: '', keyword: 'required', message: "must have required property 'settle'" },
      { instancePath: '', keyword: 'if', message: 'must match "then" schema' },
    ]);
    expect(issues('TesteeRequest', { op: 'ping' })).toEqual([{ instancePath: '', keyword: 'required', message: "must have required property 'id'" }]);
  });

  it('a hello answer without a manifest, or with a revision that is not major.minor', () => {
    expect(issues('TesteeHello', { protocol: 1, spec: '1.3.0', name: 'x' })).toEqual([
      { instancePath: '', keyword: 'required', message: "must have required property 'manifest'" },
      { instancePath: '/spec', keyword: 'pattern', message: 'must match pattern "^[0-9]+\\.[0-9]+$"' },
    ]);
  });

  it.each<[string, unknown]>([
    ['bytes that are not canonical base64', { $bytes: 'aGk' }],
    ['a $ form with a key it does not have', { $bytes: 'aGk=', length: 2 }],
    ['a plain object with an own key beginning with $', { $env: 'x' }],
    ['a $number that JSON can carry', { $number: '1' }],
    ['a callback without throws', { $function: 'c1' }],
    ['a bigint that is not an integer', { $bigint: '1.5' }],
    ['undefined as anything but true', { $undefined: false }],
  ])('a value: %s', (_what, value) => {
    const found = issues('WireValue', value);
    expect(found.at(-1)).toEqual({ instancePath: '', keyword: 'anyOf', message: 'must match a schema in anyOf' });
    // Inside a message, the failure names the value's place.
    expect(issues('TesteeRequest', { id: 'r1', op: 'write', process: 'p1', data: value, settle: 'r2' }).some((issue) => issue.instancePath === '/data' && issue.keyword === 'anyOf')).toBe(true);
  });

  it('names the place of a bad value deep in an answer', () => {
    const bad = { id: 'r1', ok: true, value: { ...(result as Record<string, WireValue>), stdout: { $bytes: 'not base64!' } } };
    expect(issues('TesteeLine', bad)).toContainEqual({ instancePath: '/value/stdout/$bytes', keyword: 'pattern', message: expect.stringMatching(/^must match pattern/) as unknown as string });
  });
});

describe('testeeValidatorFor', () => {
  it('names only the definitions of the testee document', () => {
    expect(() => testeeValidatorFor('ExecResult' as TesteeDefinitionName)).toThrow(/no definition of the testee protocol named ExecResult/);
    expect(() => testeeValidatorFor('toString' as TesteeDefinitionName)).toThrow(/no definition of the testee protocol/);
  });
});
