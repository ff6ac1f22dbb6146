// The background tools (start, read, write, kill, list): their input schemas,
// what `tools/list` advertises of them, and the call of each.
import { z } from 'zod';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { InvalidArgument, SIGNALS, type Signal } from '@sandstream/types';
import { MAX_READ_WAIT_MS, type JobOutput, type Jobs, type JobStatus } from './jobs.js';

const id = z.string().min(1).describe('The id `start` returned.');

export const jobInputSchemas = {
  start: z
    .object({
      argv: z.array(z.string()).min(1).optional().describe('The command and its arguments, run without a shell. Give this or `command`.'),
      command: z.string().min(1).optional().describe("A shell line, run as ['sh', '-c', command]. Give this or `argv`."),
      cwd: z.string().optional().describe("Working directory; the sandbox's default when absent."),
      env: z.record(z.string(), z.string()).optional().describe("Variables added to the sandbox's environment."),
    })
    .strict(),
  read: z
    .object({
      id,
      waitMs: z.number().int().nonnegative().max(MAX_READ_WAIT_MS).optional().describe('Wait up to this long for new output or the end (default 0: answer at once).'),
    })
    .strict(),
  write: z
    .object({
      id,
      text: z.string().describe('Text written to standard input.'),
      end: z.boolean().optional().describe('Close standard input after the text (the command then sees end-of-file).'),
    })
    .strict(),
  kill: z
    .object({
      id,
      signal: z.enum(SIGNALS).optional().describe('Send this signal only. Without it, the whole tree is terminated: SIGTERM, then SIGKILL after the grace period.'),
    })
    .strict(),
  list: z.object({}).strict(),
} as const;

export type JobToolName = keyof typeof jobInputSchemas;

const DESCRIPTIONS: Record<JobToolName, string> = {
  start:
    'Starts a command in the background and returns its id at once. It runs until it exits, `kill` ends it, or this MCP session ends (which ends every command it started). Read its output with `read`.',
  read: 'Returns what a background command wrote since the last read (stdout and stderr apart), and whether it still runs, with its exit code or signal once it ended.',
  write: "Writes text to a background command's standard input; with end: true, closes it.",
  kill: "Terminates a background command and everything it started (or sends one signal). It stays listed, so its last output can still be read.",
  list: 'Lists the background commands of this session, running and ended.',
};

function jsonSchema(schema: z.ZodType): Tool['inputSchema'] {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: 'draft-7' }) as Record<string, unknown>;
  return { type: 'object', ...rest };
}

/** The background tools as `tools/list` gives them. */
export function jobTools(sandboxName: string): Tool[] {
  return (Object.keys(jobInputSchemas) as JobToolName[]).map((name) => ({
    name,
    title: `${name[0]!.toUpperCase()}${name.slice(1)} a background command (${sandboxName})`,
    description: DESCRIPTIONS[name],
    inputSchema: jsonSchema(jobInputSchemas[name]),
    annotations: { destructiveHint: name === 'start' || name === 'kill' || name === 'write', readOnlyHint: name === 'read' || name === 'list' },
  }));
}

function how(status: JobStatus): string {
  if (status.state === 'running') return 'running';
  if (status.state === 'failed') return `failed: ${status.error?.code} ${status.error?.message}`;
  return status.signal !== null ? `killed by ${status.signal}` : `exited with code ${status.exitCode}`;
}

function result(structured: object, text: string): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent: { ...structured } };
}

function outputText(output: JobOutput): string {
  const parts = [`${output.id}: ${how(output)}`];
  for (const stream of ['stdout', 'stderr'] as const) {
    if (output.dropped[stream] > 0) parts.push(`(${output.dropped[stream]} bytes of ${stream} dropped unread)`);
    if (output[stream] !== '') parts.push(`${stream}:\n${output[stream]}`);
  }
  return parts.join('\n');
}

/** Runs one validated call of a background tool; throws the contract's errors. */
export async function callJobTool(jobs: Jobs, name: JobToolName, args: Record<string, unknown>): Promise<CallToolResult> {
  switch (name) {
    case 'start': {
      const input = args as z.infer<typeof jobInputSchemas.start>;
      if ((input.argv === undefined) === (input.command === undefined)) throw new InvalidArgument('arguments', 'give exactly one of argv and command');
      const status = await jobs.start(input.argv ?? ['sh', '-c', input.command!], input);
      return result(status, `started ${status.id}: ${JSON.stringify(status.argv)}`);
    }
    case 'read': {
      const input = args as z.infer<typeof jobInputSchemas.read>;
      const output = await jobs.read(input.id, input.waitMs ?? 0);
      return result(output, outputText(output));
    }
    case 'write': {
      const input = args as z.infer<typeof jobInputSchemas.write>;
      const status = await jobs.write(input.id, input.text, input.end ?? false);
      return result(status, `wrote ${Buffer.byteLength(input.text)} bytes to ${status.id}${input.end === true ? ', then closed its standard input' : ''}`);
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
