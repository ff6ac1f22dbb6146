/**
 * A stdio MCP server whose tools (`sandbox_exec`, `sandbox_shell`,
 * `sandbox_start`, `sandbox_read`, ...) run commands through any Sandstream adapter, and the
 * library it is built from.
 *
 * @packageDocumentation
 */
export {
  createExecServer,
  DEFAULT_UNREAD_BYTES,
  PARTIAL_META_KEY,
  STREAM_META_KEY,
  type ExecServer,
  type ExecServerOptions,
} from './server.js';
export { AdapterLoadError, BUILT_IN_ADAPTERS, openSandbox } from './adapter.js';
export { MAX_LINE_CHARS } from './exec.js';
export { MAX_READ_WAIT_MS, READ_SETTLE_MS, type JobOutput, type JobStatus } from './jobs.js';
export { DEFAULT_OUTPUT_BUDGET, MIN_OUTPUT_BUDGET, type Omitted } from './output.js';
export { DEFAULT_EXEC_TIMEOUT_MS, INTERNAL, MAX_EXEC_TIMEOUT_MS, type ExecFailure, type ExecInput, type ExecOutcome } from './schema.js';
export { DEFAULT_TASK_TTL_MS, MAX_RUNNING_TASKS, MAX_TASK_TTL_MS, TASK_POLL_INTERVAL_MS } from './tasks.js';
export { DEFAULT_TERMINAL, KEYS, TerminalText } from './terminal.js';
export { DEFAULT_TOOL_PREFIX, TOOLS } from './tool-text.js';
export { VERSION } from './version.js';
