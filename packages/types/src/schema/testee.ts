import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox';
import { BASE64_PATTERN } from './bytes.js';
import { definition } from './definition.js';

// The testee protocol (spec 1.3, section 18; ADR-0038): the messages the kit
// and a testee exchange, one JSON object a line. Generated into
// `spec/<version>/testee.json`, a document of its own beside schema.json.
//
// Every message is open: an object may carry properties section 18 does not
// name, and a reader ignores them (SS-TESTEE-1). Only the value forms of
// section 18.3 are closed: a `$` form is exactly its keys, so no value is ever
// mistaken for one.
//
// WireValue and WireError are recursive, so their uses are `$ref`s to the
// document's own `$defs`, and their static types are written out by hand (they
// are the types the kit's bridge and its TypeScript testee use).

/** A use of one of the recursive definitions of the testee document, by reference. */
function ref<T>(name: 'WireValue' | 'WireError', description?: string) {
  return Type.Unsafe<T>(description === undefined ? { $ref: `#/$defs/${name}` } : { $ref: `#/$defs/${name}`, description });
}

/**
 * A value as it travels between the kit and a testee (section 18.3): a JSON
 * value is itself; what JSON cannot carry is a one-key object whose key
 * begins with `$` (`$bytes`, `$undefined`, `$number`, `$bigint`,
 * `$function`, `$signal`, `$other`), and a plain object whose own keys
 * begin with `$` is wrapped in `$object`.
 */
export type WireValue = null | boolean | number | string | WireValue[] | { readonly [key: string]: WireValue };

const value = (description?: string) => ref<WireValue>('WireValue', description);

/** A `$` form: exactly the keys it names, all of them required. */
function form(properties: Record<string, TSchema>, description: string) {
  return Type.Object(properties, { additionalProperties: false, description });
}

/** The value form of section 18.3. */
export const WireValue = definition(
  'WireValue',
  'A value in the value form of the testee protocol: a JSON value is itself; what JSON cannot carry is a one-key object whose key begins with $ ($bytes, $undefined, $number, $bigint, $function, $signal, $other), and a plain object whose own keys begin with $ is wrapped in $object.',
  Type.Unsafe<WireValue>(
    Type.Union([
      Type.Null(),
      Type.Boolean(),
      Type.Number({ description: 'A finite number; NaN and the infinities travel as $number.' }),
      Type.String(),
      Type.Array(value()),
      Type.Unsafe<{ readonly [key: string]: WireValue }>({
        type: 'object',
        // No own key begins with `$`: such an object travels wrapped in `$object`.
        propertyNames: { pattern: '^(?:$|[^$])' },
        additionalProperties: { $ref: '#/$defs/WireValue' },
        description: 'A plain object, none of whose own keys begins with $.',
      }),
      form(
        {
          $bytes: Type.String({
            contentEncoding: 'base64',
            contentMediaType: 'application/octet-stream',
            pattern: BASE64_PATTERN,
            description: 'The bytes, as canonical padded base64.',
          }),
        },
        'A Uint8Array (or another view of bytes).',
      ),
      form({ $undefined: Type.Literal(true) }, 'undefined.'),
      form(
        { $number: Type.Union([Type.Literal('NaN'), Type.Literal('Infinity'), Type.Literal('-Infinity')]) },
        'A number JSON cannot carry.',
      ),
      form({ $bigint: Type.String({ pattern: '^-?[0-9]+$' }) }, 'A bigint, in decimal.'),
      form(
        {
          $function: Type.String({ description: 'The id the testee calls it by, in a call line.' }),
          throws: Type.Boolean({ description: 'Whether the stand-in throws after its call line (section 18.5).' }),
        },
        'A callback the kit passes (section 18.5).',
      ),
      form(
        {
          $signal: Type.String({ description: 'The id an abort request names.' }),
          aborted: Type.Boolean({ description: 'Whether the signal was already aborted.' }),
          reason: value('Its reason when aborted, else null.'),
        },
        'An AbortSignal, aborted later by an abort request.',
      ),
      form(
        { $other: Type.String({ description: 'What the value was, in words.' }) },
        'A value of a type no adapter accepts (a symbol, say): the testee passes something of its own language that the adapter must refuse.',
      ),
      form(
        {
          $object: Type.Unsafe<{ readonly [key: string]: WireValue }>({
            type: 'object',
            additionalProperties: { $ref: '#/$defs/WireValue' },
            description: 'The object, its keys as they are.',
          }),
        },
        'A plain object whose own keys begin with $.',
      ),
    ]),
  ),
);

/** An error as it travels (section 18.4). */
export interface WireError {
  readonly name: string;
  readonly message: string;
  readonly code?: string;
  readonly key?: string;
  readonly reason?: string;
  readonly capability?: string;
  readonly operation?: string;
  readonly commandId?: string;
  readonly argv?: WireValue;
  /** The partial result of `AbortError` and `CallbackFailed`, in the value form. */
  readonly result?: WireValue;
  readonly cause?: WireError;
  /** Set on what a testee's stand-in for a throwing callback threw: the callback's id. */
  readonly callback?: string;
  /** A `SuppressedError`'s two parts. */
  readonly error?: WireError;
  readonly suppressed?: WireError;
  /** A thrown value that is not an Error. */
  readonly thrown?: WireValue;
  /** Where it was thrown, in the testee's own words (a stack trace). */
  readonly stack?: string;
}

const error = (description: string) => Type.Optional(ref<WireError>('WireError', description));

/** An error as it travels between the testee and the kit (section 18.4). */
export const WireError = definition(
  'WireError',
  'An error as it travels: name and message, and for the errors of section 14 code and the fields of its class. The kit rebuilds the class of section 14 from code; an error with no code, or a code section 14 does not define, is not the contract\'s.',
  Type.Object({
    name: Type.String({ description: 'The error\'s name, as thrown.' }),
    message: Type.String({ description: 'Its message, as thrown.' }),
    code: Type.Optional(Type.String({ description: 'The ErrorCode of section 14; absent for an error that is not the contract\'s.' })),
    key: Type.Optional(Type.String({ description: 'INVALID_ARGUMENT: the key it names.' })),
    reason: Type.Optional(Type.String({ description: 'INVALID_ARGUMENT: why.' })),
    capability: Type.Optional(Type.String({ description: 'CAPABILITY_NOT_SUPPORTED: the capability.' })),
    operation: Type.Optional(Type.String({ description: 'CAPABILITY_NOT_SUPPORTED: the operation refused.' })),
    commandId: Type.Optional(Type.String({ description: 'TRANSPORT and COMMAND_NOT_FOUND: the command.' })),
    argv: Type.Optional(value('SPAWN_FAILED: the argv, in the value form.')),
    result: Type.Optional(value('ABORTED and CALLBACK_FAILED: the partial result, in the value form.')),
    cause: error('The cause, the same way.'),
    callback: Type.Optional(
      Type.String({ description: 'On what a stand-in callback threw: the id of the callback (section 18.5).' }),
    ),
    error: error('A SuppressedError: the error.'),
    suppressed: error('A SuppressedError: the suppressed error.'),
    thrown: Type.Optional(value('A thrown value that is not an error (name NonError), in the value form.')),
    stack: Type.Optional(Type.String({ description: 'Where it was thrown, in the testee\'s own words (a stack trace).' })),
  }),
);

/** The second id of a request answered in two steps (`run`, `attach`, `commands`, and a Process's calls that return a promise). */
const settle = () =>
  Type.String({ description: 'The id under which the testee answers, later, how the promise the call returned settled; unanswered when the call threw.' });

/** The parameters of each request of section 18.2, by `op`: its properties besides `id` and `op`. */
export const TESTEE_PARAMETERS = {
  hello: Type.Object({
    protocol: Type.Integer({ minimum: 1, description: "The protocol's version: 1." }),
    spec: Type.String({ pattern: '^[0-9]+\\.[0-9]+$', description: 'The spec revision the kit checks (major.minor).' }),
  }),
  open: Type.Object({}),
  close: Type.Object({ sandbox: Type.String() }),
  manifest: Type.Object({ sandbox: Type.String() }),
  run: Type.Object({ sandbox: Type.String(), argv: value(), options: value(), settle: settle() }),
  stream: Type.Object({ sandbox: Type.String(), argv: value(), options: value() }),
  props: Type.Object({ process: Type.String() }),
  stdin: Type.Object({ process: Type.String() }),
  iterate: Type.Object({ process: Type.String() }),
  next: Type.Object({ iterator: Type.String() }),
  return: Type.Object({ iterator: Type.String() }),
  started: Type.Object({ process: Type.String(), settle: settle() }),
  wait: Type.Object({ process: Type.String(), settle: settle() }),
  dispose: Type.Object({ process: Type.String(), settle: settle() }),
  detach: Type.Object({ process: Type.String(), settle: settle() }),
  kill: Type.Object({ process: Type.String(), signal: value(), settle: settle() }),
  write: Type.Object({ process: Type.String(), data: value(), settle: settle() }),
  end: Type.Object({ process: Type.String(), settle: settle() }),
  resize: Type.Object({ process: Type.String(), cols: value(), rows: value(), settle: settle() }),
  attach: Type.Object({ sandbox: Type.String(), commandId: value(), options: value(), settle: settle() }),
  commands: Type.Object({ sandbox: Type.String(), settle: settle() }),
  abort: Type.Object({
    signal: Type.String({ description: 'The id of a $signal the kit sent.' }),
    reason: value(),
  }),
  observe: Type.Object({ sandbox: Type.String() }),
  sever: Type.Object({ process: Type.String() }),
  owner: Type.Object({ sandbox: Type.String() }),
  ping: Type.Object({}),
  bye: Type.Object({}),
} satisfies Record<string, TObject>;

/** The `op` of a request. */
export type TesteeOp = keyof typeof TESTEE_PARAMETERS;
/** Every `op`, in the order of section 18.2's table. */
export const TESTEE_OPS = Object.freeze(Object.keys(TESTEE_PARAMETERS)) as readonly TesteeOp[];

/** The parameters of the request `op`. */
export type TesteeParameters<K extends TesteeOp = TesteeOp> = Static<(typeof TESTEE_PARAMETERS)[K]>;
/** A request line: an `id` the kit chose, an `op`, and that op's parameters. */
export type TesteeRequest = { [K in TesteeOp]: { readonly id: string; readonly op: K } & TesteeParameters<K> }[TesteeOp];

/** The body of a subschema for `if`/`then`: what `TESTEE_PARAMETERS` holds, as plain JSON. */
function plain(schema: TSchema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}

/** A request of the kit's (section 18.2). */
export const TesteeRequest = definition(
  'TesteeRequest',
  "A request the kit writes on the testee's standard input: an id the kit chose, unique for the connection, an op, and the op's parameters (section 18.2).",
  Type.Unsafe<TesteeRequest>({
    type: 'object',
    required: ['id', 'op'],
    properties: {
      id: { type: 'string', description: 'Chosen by the kit, unique for the connection; the answer carries it.' },
      op: { type: 'string', enum: [...TESTEE_OPS], description: 'The call of the contract the request makes.' },
    },
    // One branch per op, so that a request missing a parameter fails at that
    // parameter rather than at every op's branch.
    allOf: TESTEE_OPS.filter((op) => Object.keys(TESTEE_PARAMETERS[op].properties).length > 0).map((op) => ({
      if: { required: ['op'], properties: { op: { const: op } } },
      then: plain(TESTEE_PARAMETERS[op]),
    })),
  }),
);

/** The testee's answer to `hello` (section 18.2). */
export interface TesteeHello {
  readonly protocol: number;
  readonly spec: string;
  readonly name: string;
  /** The capability manifest of a fresh sandbox (`Sandbox.capabilities`), in the value form. */
  readonly manifest: WireValue;
  /** Its termination settings, in the value form, where it states them. */
  readonly termination?: WireValue;
  /** The adapter module's hooks the testee serves: `attach` (the `observe` request), `sever` and `owner`. */
  readonly hooks?: readonly string[];
  /** The testee's own process id: since 1.4, the process the kit kills with SIGKILL to crash an owner. */
  readonly pid?: number;
}

/** The value of the answer to `hello` (section 18.2). */
export const TesteeHello = definition(
  'TesteeHello',
  "The value of the testee's answer to hello: the protocol and spec revision it speaks, the adapter's name, its manifest and termination, and the hooks it serves (section 18.2).",
  Type.Object({
    protocol: Type.Integer({ minimum: 1, description: "The protocol's version the testee speaks; the kit refuses one it does not." }),
    spec: Type.String({ pattern: '^[0-9]+\\.[0-9]+$', description: 'The spec revision the adapter implements (major.minor).' }),
    name: Type.String({ description: "The adapter's Sandbox.name." }),
    manifest: value("The CapabilityManifest of a fresh sandbox, in the value form; the kit's cases judge it."),
    termination: Type.Optional(value("The sandbox's termination (graceMs, killWaitMs and, since 1.4, ownerLossMs) in the value form; {\"$undefined\": true} where it states none.")),
    hooks: Type.Optional(
      Type.Array(Type.String(), { description: 'The hooks of the adapter module the testee serves: attach (the observe request), sever and owner (section 18.6).' }),
    ),
    pid: Type.Optional(Type.Integer({ minimum: 1, description: "The testee's own process id: a command id equal to it names the testee, not a command; since 1.4, the process the kit kills with SIGKILL when it crashes a second testee as an owner (section 18.6)." })),
  }),
);

/** What the adapter raised where no caller could catch it (section 18.4). */
export type TesteeFaultKind = 'uncaught exception' | 'unhandled rejection';

/** A line the testee writes: an answer, a callback's call, or a fault (sections 18.1, 18.4 and 18.5). */
/** The properties of the Process an answer concerns, as they were when the call settled (section 18.2). */
export interface TesteeProps {
  readonly pid: WireValue;
  readonly commandId: WireValue;
  readonly exited: WireValue;
  readonly skipped?: WireValue;
}

export type TesteeLine =
  | { readonly id: string; readonly ok: true; readonly value?: WireValue; readonly props?: TesteeProps }
  | { readonly id: string; readonly ok: false; readonly error: WireError; readonly props?: TesteeProps }
  | { readonly call: string; readonly args: readonly WireValue[] }
  | { readonly fault: WireError; readonly kind: TesteeFaultKind; readonly requests: readonly string[] };

/** A line of the testee's (sections 18.1, 18.4 and 18.5). */
export const TesteeLine = definition(
  'TesteeLine',
  "A line the testee writes on its standard output: an answer to a request (ok true with its value, or ok false with an error), a callback's call (call and args), or a fault the adapter raised where no caller could catch it (fault, kind and requests).",
  Type.Unsafe<TesteeLine>({
    type: 'object',
    // Told apart by the property each shape alone has: call, fault, else an answer.
    if: { required: ['call'], properties: { call: true } },
    then: {
      description: "A callback's call: the id of the $function the kit passed, and the arguments of the call in the value form (section 18.5).",
      required: ['call', 'args'],
      properties: {
        call: { type: 'string' },
        args: { type: 'array', items: { $ref: '#/$defs/WireValue' } },
      },
    },
    else: {
      if: { required: ['fault'], properties: { fault: true } },
      then: {
        description: 'What the adapter raised where no caller could catch it, and the requests whose work raised it, where the testee can tell (section 18.4).',
        required: ['fault', 'kind', 'requests'],
        properties: {
          fault: { $ref: '#/$defs/WireError' },
          kind: { type: 'string', enum: ['uncaught exception', 'unhandled rejection'] },
          requests: { type: 'array', items: { type: 'string' } },
        },
      },
      else: {
        description: 'An answer to the request of that id: its value, or the error the call threw or rejected with.',
        required: ['id', 'ok'],
        properties: {
          id: { type: 'string', description: 'The id of the request answered (or its settle id).' },
          ok: { type: 'boolean' },
          props: {
            type: 'object',
            description: 'For a request about a Process: its pid, commandId, exited and skipped when the call settled, each in the value form.',
            required: ['pid', 'commandId', 'exited'],
            properties: {
              pid: { $ref: '#/$defs/WireValue' },
              commandId: { $ref: '#/$defs/WireValue' },
              exited: { $ref: '#/$defs/WireValue' },
              skipped: { $ref: '#/$defs/WireValue' },
            },
          },
        },
        allOf: [
          {
            if: { required: ['ok'], properties: { ok: { const: true } } },
            then: { properties: { value: { $ref: '#/$defs/WireValue', description: "The call's result, in the value form." } } },
          },
          {
            if: { required: ['ok'], properties: { ok: { const: false } } },
            then: { required: ['error'], properties: { error: { $ref: '#/$defs/WireError' } } },
          },
        ],
      },
    },
  }),
);

/** Every definition of the testee document, in the order it lists them. */
export const TESTEE_DEFINITIONS = {
  TesteeRequest,
  TesteeLine,
  TesteeHello,
  WireError,
  WireValue,
} as const;
export type TesteeDefinitionName = keyof typeof TESTEE_DEFINITIONS;
