/**
 * The Sandstream contract: what a sandbox adapter implements and what its
 * callers rely on. Schemas are TypeBox values (the JSON Schema of the spec is
 * generated from them); types sit beside them under the same names.
 *
 * @packageDocumentation
 */
export { SPEC_VERSION, SCHEMA_ID, READER_SCHEMA_ID, TESTEE_SCHEMA_ID, schemaRef } from './version.js';
export * from './schema/index.js';
export {
  TesteeRequest,
  TesteeLine,
  TesteeHello,
  WireError,
  WireValue,
  TESTEE_DEFINITIONS,
  TESTEE_OPS,
  TESTEE_PARAMETERS,
  type TesteeDefinitionName,
  type TesteeFaultKind,
  type TesteeOp,
  type TesteeParameters,
  type TesteeProps,
} from './schema/testee.js';
export * from './errors.js';
export * from './options.js';
export type { BackgroundProcess, CommandInfo, Process, Sandbox, SandboxFactory, SandboxTermination, StdinWriter } from './contract.js';
export { createExecResult } from './result.js';
export { lines, type Line } from './lines.js';
export { validateArgv, validateTerminalSize, planRun, planStream } from './runtime/execution-plan.js';
export {
  validatorFor,
  testeeValidatorFor,
  encodeOutputChunk,
  decodeOutputChunk,
  encodeExecResult,
  decodeExecResult,
  type SchemaIssue,
  type SpecValidator,
  type ValidatorOptions,
} from './validators.js';
export { buildSpecDocument, buildTesteeDocument, serializeSpecDocument, type SpecDocument, type SpecDocumentKind } from './spec-document.js';
