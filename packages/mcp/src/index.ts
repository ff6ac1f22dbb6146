/**
 * A stdio MCP server whose `exec` tool runs commands through any Sandstream
 * adapter, and the library it is built from.
 *
 * @packageDocumentation
 */
export {
  createExecServer,
  DEFAULT_TOOL_OUTPUT_BYTES,
  PARTIAL_META_KEY,
  STREAM_META_KEY,
  type ExecServer,
  type ExecServerOptions,
} from './server.js';
export { AdapterLoadError, BUILT_IN_ADAPTERS, openSandbox } from './adapter.js';
export { MAX_LINE_CHARS } from './exec.js';
export { MAX_READ_WAIT_MS, type JobOutput, type JobStatus } from './jobs.js';
export { INTERNAL, type ExecFailure, type ExecInput, type ExecOutcome } from './schema.js';
export { VERSION } from './version.js';
