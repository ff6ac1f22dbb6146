import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { Value } from '@sinclair/typebox/value';
import { InvalidArgument } from './errors.js';
import { isPlainObject } from './runtime/plain-object.js';
import { DEFINITIONS, ExecResult, OutputChunk, type DefinitionName } from './schema/index.js';
import { TESTEE_DEFINITIONS, type TesteeDefinitionName } from './schema/testee.js';
import type { ExecResult as ExecResultType, ExecResultJson } from './schema/exec-result.js';
import type { OutputChunk as OutputChunkType, OutputChunkJson } from './schema/output-chunk.js';
import { createExecResult } from './result.js';
import { buildSpecDocument, buildTesteeDocument, type SpecDocument, type SpecDocumentKind } from './spec-document.js';
import { READER_SCHEMA_ID, SCHEMA_ID, TESTEE_SCHEMA_ID } from './version.js';

// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/** One validation failure, as ajv reports it. */
export interface SchemaIssue {
  /** JSON Pointer into the instance, e.g. `/data`. */
  readonly instancePath: string;
  /** The schema keyword that failed, e.g. `pattern`, `required`, `maxLength`. */
  readonly keyword: string;
  readonly message: string;
}

/** A validator of one spec definition. */
export interface SpecValidator<T = unknown> {
  (value: unknown): value is T;
  /** The failures of the most recent call, empty when it passed. */
  readonly issues: readonly SchemaIssue[];
}

type DocumentKind = SpecDocumentKind | 'testee';
const compiled = new Map<DocumentKind, Map<string, ValidateFunction>>();

function compile(kind: DocumentKind): Map<string, ValidateFunction> {
  const done = compiled.get(kind);
  if (done) return done;
  // Full strict mode: the generated documents must compile without ajv
  // tolerating anything (ADR-0012; schema-drift.test.ts compiles them bare too).
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  addFormats(ajv);
  const document: SpecDocument = kind === 'testee' ? buildTesteeDocument() : buildSpecDocument(kind);
  ajv.addSchema(document);
  const id = kind === 'exact' ? SCHEMA_ID : kind === 'reader' ? READER_SCHEMA_ID : TESTEE_SCHEMA_ID;
  const validators = new Map<string, ValidateFunction>();
  for (const name of Object.keys(document.$defs)) {
    validators.set(name, ajv.getSchema(`${id}#/$defs/${name}`)!);
  }
  compiled.set(kind, validators);
  return validators;
}

/** Options of {@link validatorFor}. */
export interface ValidatorOptions {
  /**
   * `exact` (the default): this revision's wire form, closed to unknown
   * properties; what an implementation writes must pass. `reader`: open to
   * what later 1.x revisions add; for a consumer reading objects a newer
   * implementation wrote (ADR-0012).
   */
  readonly document?: SpecDocumentKind;
}

/**
 * Returns the ajv validator of a spec definition (draft 2020-12, compiled
 * once per process).
 *
 * @example
 * ```ts
 * import { validatorFor } from '@sandstream/types';
 * const isChunk = validatorFor('OutputChunk');
 * if (!isChunk({ stream: 'stdout', data: 'aGk=' })) console.error(isChunk.issues);
 * ```
 */
export function validatorFor<T = unknown>(name: DefinitionName, options: ValidatorOptions = {}): SpecValidator<T> {
  if (!isPlainObject(options)) throw new InvalidArgument('options', 'must be an object');
  const kind = options.document ?? 'exact';
  if (kind !== 'exact' && kind !== 'reader') throw new InvalidArgument('options.document', 'must be "exact" or "reader"');
  const validate = typeof name === 'string' && Object.hasOwn(DEFINITIONS, name) ? compile(kind).get(name) : undefined;
  if (validate === undefined) throw new InvalidArgument('name', `no definition named ${String(name)}`);
  return checker<T>(validate);
}

/**
 * Returns the ajv validator of a definition of the testee protocol
 * (`testee.json`, spec section 18): `TesteeRequest`, `TesteeLine`,
 * `TesteeHello`, `WireError` or `WireValue`. Its messages are open to
 * properties the protocol does not name, so one document serves writers and
 * readers alike.
 *
 * @example
 * ```ts
 * import { testeeValidatorFor } from '@sandstream/types';
 * const isLine = testeeValidatorFor('TesteeLine');
 * if (!isLine({ id: 'r1', ok: false })) console.error(isLine.issues);
 * ```
 */
export function testeeValidatorFor<T = unknown>(name: TesteeDefinitionName): SpecValidator<T> {
  const validate = typeof name === 'string' && Object.hasOwn(TESTEE_DEFINITIONS, name) ? compile('testee').get(name) : undefined;
  if (validate === undefined) throw new InvalidArgument('name', `no definition of the testee protocol named ${String(name)}`);
  return checker<T>(validate);
}

function checker<T>(validate: ValidateFunction): SpecValidator<T> {
  let issues: readonly SchemaIssue[] = [];
  const check = ((value: unknown) => {
    let ok: boolean;
    try {
      ok = validate(value) as boolean;
    } catch (error) {
      // A validator that cannot finish (a regular expression out of stack,
      // say) has not shown the value valid: report it as a failure.
      issues = [{ instancePath: '', keyword: 'validator', message: `validation failed: ${String(error)}` }];
      return false;
    }
    issues = ok ? [] : (validate.errors ?? []).map(toIssue);
    return ok;
  }) as SpecValidator<T>;
  Object.defineProperty(check, 'issues', { get: () => issues });
  return check;
}

function toIssue(error: ErrorObject): SchemaIssue {
  return { instancePath: error.instancePath, keyword: error.keyword, message: error.message ?? error.keyword };
}

/** Problems a decoder's message names; the rest are counted, so a hostile input cannot make it unbounded. */
const MESSAGE_ISSUES = 10;

function invalid(what: string, issues: readonly SchemaIssue[]): InvalidArgument {
  const first = issues[0];
  const named = issues.slice(0, MESSAGE_ISSUES).map((issue) => `${issue.instancePath.slice(0, 200) || '/'} ${issue.message} (${issue.keyword})`);
  if (issues.length > MESSAGE_ISSUES) named.push(`and ${issues.length - MESSAGE_ISSUES} more`);
  return new InvalidArgument(`${what}${first?.instancePath ?? ''}`, named.join('; '));
}

/** Encodes a chunk into its JSON wire form (`data` as base64). */
export function encodeOutputChunk(chunk: OutputChunkType): OutputChunkJson {
  return Value.Encode(OutputChunk, chunk);
}

/** Validates a chunk's JSON wire form and decodes it; throws `InvalidArgument` naming the failing path. */
export function decodeOutputChunk(json: unknown): OutputChunkType {
  const check = validatorFor('OutputChunk');
  if (!check(json)) throw invalid('chunk', check.issues);
  return decoded('chunk', () => Value.Decode(OutputChunk, json));
}

/** Encodes a result into its JSON wire form (output as base64; text views are dropped). */
export function encodeExecResult(result: ExecResultType): ExecResultJson {
  return Value.Encode(ExecResult, { ...result });
}

/** Validates a result's JSON wire form and decodes it, text views included. */
export function decodeExecResult(json: unknown): ExecResultType {
  const check = validatorFor('ExecResult');
  if (!check(json)) throw invalid('result', check.issues);
  return decoded('result', () => createExecResult(Value.Decode(ExecResult, json)));
}

/** Runs a decoding step after validation; whatever it throws becomes `InvalidArgument`. */
function decoded<T>(what: string, decode: () => T): T {
  try {
    return decode();
  } catch (error) {
    if (error instanceof InvalidArgument) throw error;
    throw new InvalidArgument(what, `cannot be decoded: ${String(error)}`);
  }
}
