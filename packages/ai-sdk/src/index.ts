/**
 * Sandstream and the Vercel AI SDK both ways: any Sandstream sandbox as an
 * AI SDK `SandboxSession` and as an exec tool, and any AI SDK sandbox session
 * as a Sandstream sandbox.
 *
 * @packageDocumentation
 */
export { toSandboxSession, exitCodeOf, type ToSandboxSessionOptions } from './to-session.js';
export { STREAM_HIGH_WATER_BYTES } from './process-streams.js';
export {
  execTool,
  type ExecToolInput,
  type ExecToolOptions,
  type ExecToolOutput,
  type ExecToolProgress,
  type ExecToolResult,
} from './exec-tool.js';
export { VERSION } from './version.js';
export { fromSandboxSession, type FromSandboxSessionOptions } from './from-session.js';
export type { SessionCommands } from './session-commands.js';
export { shellLine } from './session-driver.js';
