// The `exec` tool's input and output, as zod schemas (the server validates
// with them) and as the JSON Schemas `tools/list` advertises (generated from
// them, so the two cannot drift).
import { z } from 'zod';
import type { ErrorCode, TerminalSize } from '@sandstream/types';
import type { Omitted } from './output.js';
import { strictJsonSchema } from './strict-schema.js';
import { ptyArgumentSchema, terminalSizeSchema } from './terminal.js';

/**
 * The default time limit of an `exec` call: 50 s, under the 60 s after which
 * the MCP SDK's client gives up on a request by default, so that a silent
 * command is reported as timed out, with its output so far, rather than lost
 * to the client's cancellation.
 */
export const DEFAULT_EXEC_TIMEOUT_MS = 50_000;

/** The default highest `timeout` a call may ask for: 10 minutes. */
export const MAX_EXEC_TIMEOUT_MS = 600_000;

/** `NAME=value`: the form of an `env` entry (an object of variables is outside the strict schema subset). */
const ENV_ENTRY = /^[^=\0]+=/;

/** The `env` argument of `exec` and `start`. */
export const envArgumentSchema = z
  .array(z.string().regex(ENV_ENTRY, 'must be NAME=value'))
  .optional()
  .describe('Variables for this command only, each "NAME=value", added to the sandbox\'s environment.');

/** The `env` argument as variables. */
export function envOf(entries: readonly string[] | undefined): Record<string, string> | undefined {
  if (entries === undefined) return undefined;
  return Object.fromEntries(entries.map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]));
}

export const argvArgumentSchema = z.array(z.string()).min(1).optional().describe('The program and its arguments, run without a shell (no globs, pipes or variables). Give this or `command`, not both.');
export const commandArgumentSchema = z.string().min(1).optional().describe('A shell line, run as sh -c (pipes, &&, redirections work). Give this or `argv`, not both.');
export const cwdArgumentSchema = z.string().optional().describe("Working directory for this command only; the sandbox's default directory when absent.");

export const execInputSchema = z
  .object({
    argv: argvArgumentSchema,
    command: commandArgumentSchema,
    cwd: cwdArgumentSchema,
    env: envArgumentSchema,
    timeout: z.number().int().positive().optional().describe('Time limit in milliseconds (an integer of 1 or more; the default and the maximum are in the tool description).'),
    stdin: z.string().optional().describe('Text written to standard input, which is then closed.'),
    pty: ptyArgumentSchema.optional(),
    raw: z.boolean().optional().describe("With pty: return the terminal's output as it came (CR LF, escape sequences) instead of as text."),
  })
  .strict();

/** The arguments of the `exec` tool (null stands for an argument not given). */
export interface ExecInput {
  /** The command and its arguments, run without a shell. Exactly one of `argv` and `command`. */
  readonly argv?: string[] | undefined;
  /** A shell line, run as `['sh', '-c', command]`. */
  readonly command?: string | undefined;
  /** Working directory; the sandbox's default when absent. */
  readonly cwd?: string | undefined;
  /** Variables added to the sandbox's environment, each `NAME=value`. */
  readonly env?: string[] | undefined;
  /** Time limit in milliseconds; the server's default when absent, at most its maximum. */
  readonly timeout?: number | undefined;
  /** Text written to standard input, which is then closed. */
  readonly stdin?: string | undefined;
  /** Spec 1.5, capability `pty`: run on a terminal of this size (`true`: {@link DEFAULT_TERMINAL}; `false`: on pipes). */
  readonly pty?: boolean | TerminalSize | undefined;
  /** With `pty`: the output is the terminal's as it came, not as text. */
  readonly raw?: boolean | undefined;
}

const omittedSchema = z.object({ bytes: z.number().int(), lines: z.number().int() }).strict();

/** How a command ended, as `structuredContent` carries it: the output itself is in the text content only. */
export const execOutcomeSchema = z
  .object({
    exitCode: z.number().int().nullable().describe('The exit code, or null when a signal ended the command.'),
    signal: z.string().nullable().describe('The signal that ended the command, or null.'),
    timedOut: z.boolean().describe('True when the time limit ended the command (its whole tree was terminated).'),
    timeoutMs: z.number().int().describe('The time limit the command ran under.'),
    truncated: z.boolean().describe('True when the output was cut to fit the budget: its head and tail are in the text, around a marker.'),
    durationMs: z.number().nonnegative(),
    omitted: z.object({ stdout: omittedSchema, stderr: omittedSchema }).strict().describe('What the cut left out of each stream.'),
    terminal: terminalSizeSchema.optional().describe('For a command on a terminal: its size. Its output is then all on stdout.'),
  })
  .strict();

/** How a command ended: the `structuredContent` of a successful `exec` call. Its output is in the result's text content. */
export interface ExecOutcome {
  /** The exit code, or null when a signal ended the command. */
  readonly exitCode: number | null;
  /** The signal that ended the command, or null. */
  readonly signal: string | null;
  /** True when the time limit ended the command. */
  readonly timedOut: boolean;
  /** The time limit the command ran under, in milliseconds. */
  readonly timeoutMs: number;
  /** True when the output was cut to fit the server's output budget. */
  readonly truncated: boolean;
  /** Milliseconds from the start request to the end. */
  readonly durationMs: number;
  /** What the cut left out of each stream (zero when nothing was). */
  readonly omitted: { readonly stdout: Omitted; readonly stderr: Omitted };
  /** For a command run with `pty`: the terminal's size. Its output is then all on stdout. */
  readonly terminal?: TerminalSize | undefined;
}

/** Not a spec code: the server itself failed in a way the contract does not name. */
export const INTERNAL = 'INTERNAL' as const;

/** A failure, as `structuredContent` of a result with `isError: true` carries it. */
const execFailureSchema = z
  .object({
    error: z
      .object({
        code: z.string().describe("A Sandstream error code (the spec's ErrorCode: SPAWN_FAILED, INVALID_ARGUMENT, ...), or INTERNAL."),
        message: z.string(),
        key: z.string().optional().describe('For INVALID_ARGUMENT: the argument at fault.'),
      })
      .strict(),
  })
  .strict();

/** The `structuredContent` of a call that failed (`isError: true`). */
export interface ExecFailure {
  /** What failed: the code to match on, and a message. */
  readonly error: {
    /** A code of the spec's `ErrorCode`, or `INTERNAL` for a fault of the server itself. */
    readonly code: ErrorCode | typeof INTERNAL;
    readonly message: string;
    /** For `INVALID_ARGUMENT`: the argument at fault, e.g. `arguments.argv`. */
    readonly key?: string;
  };
}

// The hand-written types and the schemas describe the same values.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Mutable<T> = { -readonly [K in keyof T]: T[K] };
const _inputAgrees: Same<z.infer<typeof execInputSchema>, Mutable<ExecInput>> = true;
const _outcomeAgrees: Same<z.infer<typeof execOutcomeSchema>, Mutable<Omit<ExecOutcome, 'omitted'>> & { omitted: { stdout: Mutable<Omitted>; stderr: Mutable<Omitted> } }> = true;
void _inputAgrees;
void _outcomeAgrees;

function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  // draft-7: what MCP clients' validators (Ajv's default) read without extra setup.
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: 'draft-7' }) as Record<string, unknown>;
  return rest;
}

export const inputJsonSchema = strictJsonSchema(execInputSchema);

/** The terminal arguments, which a tool offers only where the sandbox has the `pty` capability. */
export const TERMINAL_ARGUMENTS = ['pty', 'raw'] as const;

/** A tool's input JSON Schema without the terminal arguments, for a sandbox without `pty`. */
export function withoutTerminal<T extends Record<string, unknown>>(schema: T): T {
  const properties = { ...(schema['properties'] as Record<string, unknown>) };
  for (const name of TERMINAL_ARGUMENTS) delete properties[name];
  const required = Array.isArray(schema['required']) ? (schema['required'] as string[]).filter((name) => !(TERMINAL_ARGUMENTS as readonly string[]).includes(name)) : schema['required'];
  return { ...schema, properties, ...(required !== undefined && { required }) };
}

// MCP wants an object at the root; either shape is one, so the union is
// stated under it. A failed call validates as ExecFailure.
export const outputJsonSchema = {
  type: 'object',
  anyOf: [jsonSchema(execOutcomeSchema), jsonSchema(execFailureSchema)],
} as const;
