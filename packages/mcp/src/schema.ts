// The `exec` tool's input and output, as zod schemas (the server validates
// with them) and as the JSON Schemas `tools/list` advertises (generated from
// them, so the two cannot drift).
import { z } from 'zod';
import type { ErrorCode } from '@sandstream/types';

export const execInputSchema = z
  .object({
    argv: z.array(z.string()).min(1).optional().describe('The command and its arguments, run without a shell. Give this or `command`.'),
    command: z.string().min(1).optional().describe("A shell line, run as ['sh', '-c', command]. Give this or `argv`."),
    cwd: z.string().optional().describe("Working directory; the sandbox's default when absent."),
    env: z.record(z.string(), z.string()).optional().describe("Variables added to the sandbox's environment."),
    timeout: z.number().int().positive().optional().describe('Wall-clock limit in milliseconds; on expiry the command tree is terminated and timedOut is true.'),
    stdin: z.string().optional().describe('Text written to standard input, which is then closed.'),
    maxOutputBytes: z
      .number()
      .int()
      .nonnegative()
      .optional()
      .describe('Bytes kept per stream in the result. Past it, lines are still sent as progress but not kept, and truncated is true.'),
  })
  .strict();

/** The arguments of the `exec` tool. */
export interface ExecInput {
  /** The command and its arguments, run without a shell. Exactly one of `argv` and `command`. */
  readonly argv?: string[] | undefined;
  /** A shell line, run as `['sh', '-c', command]`. */
  readonly command?: string | undefined;
  /** Working directory; the sandbox's default when absent. */
  readonly cwd?: string | undefined;
  /** Variables added to the sandbox's environment. */
  readonly env?: Record<string, string> | undefined;
  /** Wall-clock limit in milliseconds. */
  readonly timeout?: number | undefined;
  /** Text written to standard input, which is then closed. */
  readonly stdin?: string | undefined;
  /** Bytes kept per stream in the result. */
  readonly maxOutputBytes?: number | undefined;
}

/** What a command produced, as `structuredContent` carries it. */
export const execOutcomeSchema = z
  .object({
    exitCode: z.number().int().nullable().describe('The exit code, or null when a signal ended the command.'),
    signal: z.string().nullable().describe('The signal that ended the command, or null.'),
    timedOut: z.boolean(),
    truncated: z.boolean().describe('True when stdout or stderr passed maxOutputBytes and the rest was not kept.'),
    durationMs: z.number().nonnegative(),
    stdout: z.string(),
    stderr: z.string(),
  })
  .strict();

/** What a command produced: the `structuredContent` of a successful `exec` call. */
export interface ExecOutcome {
  /** The exit code, or null when a signal ended the command. */
  readonly exitCode: number | null;
  /** The signal that ended the command, or null. */
  readonly signal: string | null;
  /** True when the call's `timeout` ended the command. */
  readonly timedOut: boolean;
  /** True when stdout or stderr passed `maxOutputBytes`; the rest was sent as progress but not kept. */
  readonly truncated: boolean;
  /** Milliseconds from the start request to the end. */
  readonly durationMs: number;
  /** The kept standard output, decoded as UTF-8. */
  readonly stdout: string;
  /** The kept standard error, decoded as UTF-8. */
  readonly stderr: string;
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

/** The `structuredContent` of an `exec` call that failed (`isError: true`). */
export interface ExecFailure {
  /** What failed: the code to match on, and a message for humans. */
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
const _inputAgrees: Same<z.infer<typeof execInputSchema>, { -readonly [K in keyof ExecInput]: ExecInput[K] }> = true;
const _outcomeAgrees: Same<z.infer<typeof execOutcomeSchema>, { -readonly [K in keyof ExecOutcome]: ExecOutcome[K] }> = true;
void _inputAgrees;
void _outcomeAgrees;

function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  // draft-7: what MCP clients' validators (Ajv's default) read without extra setup.
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: 'draft-7' }) as Record<string, unknown>;
  return rest;
}

export const inputJsonSchema = { type: 'object', ...jsonSchema(execInputSchema) } as const;

// MCP wants an object at the root; either shape is one, so the union is
// stated under it. A failed call validates as ExecFailure.
export const outputJsonSchema = {
  type: 'object',
  anyOf: [jsonSchema(execOutcomeSchema), jsonSchema(execFailureSchema)],
} as const;
