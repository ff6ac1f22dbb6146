// The background tools (start, read, write, kill, list, resize): their input
// schemas, what `tools/list` advertises of them, and the call of each.
import { z } from 'zod';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { CapabilityNotSupported, InvalidArgument, SIGNALS, type Sandbox, type Signal } from '@sandstream/types';
import { checkTerminal } from './exec.js';
import { MAX_READ_WAIT_MS, READ_SETTLE_MS, type JobOutput, type Jobs, type JobStatus } from './jobs.js';
import { composeText } from './output.js';
import { argvArgumentSchema, commandArgumentSchema, cwdArgumentSchema, envArgumentSchema, envOf, withoutTerminal } from './schema.js';
import { strictJsonSchema } from './strict-schema.js';
import { KEY_NAMES, keyBytes, ptyArgumentSchema, terminalSize, terminalSizeSchema } from './terminal.js';
import type { ToolNames } from './tool-text.js';

const id = z.string().min(1).describe('The id the start tool returned (job-1, job-2, ...).');

export const jobInputSchemas = {
  start: z.object({ argv: argvArgumentSchema, command: commandArgumentSchema, cwd: cwdArgumentSchema, env: envArgumentSchema, pty: ptyArgumentSchema.optional() }).strict(),
  read: z
    .object({
      id,
      waitMs: z
        .number()
        .int()
        .nonnegative()
        .max(MAX_READ_WAIT_MS)
        .optional()
        .describe(
          `Milliseconds to wait, 0 to ${MAX_READ_WAIT_MS} (default 0: answer at once). Without until: waits for output, then until it has been quiet for ${READ_SETTLE_MS} ms. ` +
            'With until: waits for the pattern. Either way it answers at once when the command ends.',
        ),
      until: z.string().min(1).optional().describe('A regular expression (JavaScript syntax) to wait for in the new output, e.g. "listening on|error"; the result says whether it matched.'),
      raw: z.boolean().optional().describe('For a command on a terminal: stdout as it came (CR LF, escape sequences) instead of as text.'),
    })
    .strict(),
  write: z
    .object({
      id,
      text: z.string().optional().describe('Text written to standard input (on a terminal: typed, so a line runs only with "enter" in keys or a \\r).'),
      keys: z
        .array(z.enum(KEY_NAMES))
        .optional()
        .describe('Named keys typed after the text, in order: "enter", "tab", "escape", "backspace", "up", "down", "left", "right", "ctrl-c" (interrupts on a terminal), "ctrl-d" (end-of-file on a terminal), "ctrl-z", ...'),
      end: z.boolean().optional().describe('Close standard input after the text (the command then sees end-of-file; on a terminal, end-of-file is typed).'),
    })
    .strict(),
  kill: z
    .object({
      id,
      signal: z.enum(SIGNALS).optional().describe('Send this signal only. Without it, the whole tree is terminated: SIGTERM, then SIGKILL after the grace period.'),
    })
    .strict(),
  list: z.object({}).strict(),
  resize: z.object({ id, cols: terminalSizeSchema.shape.cols, rows: terminalSizeSchema.shape.rows }).strict(),
} as const;

export type JobToolName = keyof typeof jobInputSchemas;

/** The tools that need the `pty` capability, absent from `tools/list` without it. */
const TERMINAL_TOOLS: readonly JobToolName[] = ['resize'];

/** What `tools/list` says of one background tool, given the names and facts of this server. */
export interface JobToolText {
  readonly title: string;
  readonly description: string;
}

/**
 * The background tools as `tools/list` gives them. Without the `pty`
 * capability, neither `resize` nor the terminal arguments are offered.
 */
export function jobTools(names: ToolNames, text: (name: JobToolName) => JobToolText, pty: boolean): Tool[] {
  return (Object.keys(jobInputSchemas) as JobToolName[])
    .filter((name) => pty || !TERMINAL_TOOLS.includes(name))
    .map((name) => {
      const schema = strictJsonSchema(jobInputSchemas[name]);
      return {
        name: names[name],
        ...text(name),
        inputSchema: pty ? schema : withoutTerminal(schema),
        annotations: { destructiveHint: name === 'start' || name === 'kill' || name === 'write' || name === 'resize', readOnlyHint: name === 'read' || name === 'list' },
      };
    });
}

function how(status: JobStatus): string {
  if (status.state === 'running') return 'running';
  if (status.state === 'failed') return `failed: ${status.error?.code} ${status.error?.message}`;
  return status.signal !== null ? `ended by ${status.signal} (no exit code)` : `exited with code ${status.exitCode}`;
}

function result(structured: object, text: string): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent: { ...structured } };
}

/** How a read's output can be kept whole, said where a cut left some out. */
const READ_ALL =
  'That part cannot be read again: to keep all of a background command\'s output, start it with its output redirected to a file (e.g. `cmd > /tmp/job.log 2>&1`) and read parts of the file with sed -n, grep or tail.';

/** Runs one validated call of a background tool; throws the contract's errors. */
export async function callJobTool(sandbox: Sandbox, jobs: Jobs, name: JobToolName, args: Record<string, unknown>, budget: number): Promise<CallToolResult> {
  switch (name) {
    case 'start': {
      const input = args as z.infer<typeof jobInputSchemas.start>;
      if ((input.argv === undefined) === (input.command === undefined)) throw new InvalidArgument('arguments', 'give exactly one of argv and command');
      checkTerminal(sandbox, input, 'start');
      const pty = terminalSize(input.pty);
      const status = await jobs.start(input.argv ?? ['sh', '-c', input.command!], { cwd: input.cwd, env: envOf(input.env), pty });
      return result(status, `started ${status.id}${pty === undefined ? '' : ` on a ${pty.cols}x${pty.rows} terminal`}; read its output with its id`);
    }
    case 'read': {
      const input = args as z.infer<typeof jobInputSchemas.read>;
      let until: RegExp | undefined;
      try {
        until = input.until === undefined ? undefined : new RegExp(input.until);
      } catch (error) {
        throw new InvalidArgument('arguments.until', `is not a regular expression: ${(error as Error).message}`);
      }
      const taken = await jobs.read(input.id, { waitMs: input.waitMs, until, raw: input.raw });
      const notes = [`${taken.status.id}: ${how(taken.status)}`];
      if (taken.status.terminal !== undefined) notes.push(`terminal ${taken.status.terminal.cols}x${taken.status.terminal.rows}`);
      if (taken.matched !== undefined) notes.push(taken.matched ? `"${input.until}" matched` : `"${input.until}" NOT seen yet`);
      for (const stream of ['stdout', 'stderr'] as const) {
        if (taken.dropped[stream] > 0) notes.push(`${taken.dropped[stream]} older bytes of ${stream} were dropped unread`);
      }
      const outputs = (['stdout', 'stderr'] as const).map((stream) => ({
        stream,
        text: { whole: taken[stream] },
        bytes: Buffer.byteLength(taken[stream]),
        lines: taken[stream].split('\n').length - 1,
      }));
      const composed = composeText(notes.join('; '), outputs, budget, READ_ALL);
      const output: JobOutput = {
        ...taken.status,
        dropped: taken.dropped,
        omitted: { stdout: composed.sections.stdout.omitted, stderr: composed.sections.stderr.omitted },
        ...(taken.matched !== undefined && { matched: taken.matched }),
      };
      return result(output, composed.text.replace(/\n\(no output\)$/, '\n(no new output)'));
    }
    case 'write': {
      const input = args as z.infer<typeof jobInputSchemas.write>;
      const text = (input.text ?? '') + keyBytes(input.keys ?? []);
      const status = await jobs.write(input.id, text, input.end ?? false);
      const keys = input.keys === undefined || input.keys.length === 0 ? '' : ` (keys ${input.keys.join(' ')})`;
      return result(status, `wrote ${Buffer.byteLength(text)} bytes${keys} to ${status.id}${input.end === true ? ', then closed its standard input' : ''}; ${how(status)}`);
    }
    case 'resize': {
      const input = args as z.infer<typeof jobInputSchemas.resize>;
      if (sandbox.capabilities.pty !== true) throw new CapabilityNotSupported('pty', 'resize');
      const status = await jobs.resize(input.id, { cols: input.cols, rows: input.rows });
      return result(status, `${status.id}: terminal now ${input.cols}x${input.rows}; ${how(status)}`);
    }
    case 'kill': {
      const input = args as z.infer<typeof jobInputSchemas.kill>;
      const status = await jobs.kill(input.id, input.signal as Signal | undefined);
      return result(status, `${status.id}: ${input.signal === undefined ? how(status) : `sent ${input.signal}; ${how(status)}`}`);
    }
    case 'list': {
      const list = jobs.list();
      return result({ jobs: list }, list.length === 0 ? 'no background commands' : list.map((job) => `${job.id} ${how(job)}: ${JSON.stringify(job.argv)}`).join('\n'));
    }
  }
}
