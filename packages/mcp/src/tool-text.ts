// What `tools/list` says to the model: the tools' names, titles and
// descriptions. A model picks a tool and writes its command from these alone,
// beside the tools of other servers, so they name the sandbox, state its
// facts (isolation, network, writable paths), and say what trips a model up:
// no state carries over between exec calls, the time limits, and which tool
// is for long-running commands. Protocol details (progress, _meta) are for
// client authors and live in the README, not here.
import type { SandboxFacts } from './facts.js';
import type { JobToolName, JobToolText } from './job-tools.js';
import { MAX_READ_WAIT_MS, READ_SETTLE_MS } from './jobs.js';

/** The default prefix of the tools' names: `sandbox_exec`, `sandbox_shell`, `sandbox_start`, ... */
export const DEFAULT_TOOL_PREFIX = 'sandbox_';

/** The tools, by their unprefixed names. */
export const TOOLS = ['exec', 'shell', 'start', 'read', 'write', 'kill', 'list', 'resize'] as const;

/** The names the tools have on this server. */
export type ToolNames = Readonly<Record<(typeof TOOLS)[number], string>>;

/**
 * The tools' names with `prefix`: letters, digits, `_` and `-` only, and at
 * most 64 characters with the longest name, which is what every major
 * provider accepts as a function name.
 */
export function toolNames(prefix: string): ToolNames {
  if (!/^[A-Za-z0-9_-]*$/.test(prefix) || prefix.length + 'resize'.length > 64) {
    throw new RangeError(`the tool prefix ${JSON.stringify(prefix)} must be letters, digits, "_" and "-", at most ${64 - 'resize'.length} characters`);
  }
  return Object.fromEntries(TOOLS.map((tool) => [tool, `${prefix}${tool}`])) as unknown as ToolNames;
}

/** The server's settings the descriptions state. */
export interface DescribedSettings {
  readonly names: ToolNames;
  readonly facts: SandboxFacts;
  readonly budget: number;
  readonly defaultTimeoutMs: number;
  readonly maxTimeoutMs: number;
  readonly pty: boolean;
}

const seconds = (ms: number): string => (ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`);

/** The `exec` tool's title and description. */
export function execText(settings: DescribedSettings): { title: string; description: string } {
  const { names, facts } = settings;
  return {
    title: `Run a command (${facts.short})`,
    description: [
      'Runs a command to completion and returns its exit status and output (stdout and stderr apart).',
      `Each call is a new process: \`cd\`, exported variables, shell functions and activated environments do NOT carry over to the next call. Chain steps in one command (\`cd app && npm test\`) or pass cwd and env, or use ${names.shell}, where cd and export carry over.`,
      `Time limit: ${seconds(settings.defaultTimeoutMs)} by default, up to ${seconds(settings.maxTimeoutMs)} with timeout (milliseconds). When it expires, the command and everything it started are terminated and the result says TIMED OUT, with the output until then.`,
      `Servers, watchers and anything that may run longer: use ${names.start} and ${names.read} instead.`,
      `Output longer than about ${settings.budget} characters is cut in the middle: the head and tail are kept around a marker that says what was left out.`,
      settings.pty ? 'With pty, the command runs on a terminal (for programs that need one): its output is one stream, returned as text with escape sequences removed.' : '',
      facts.text,
    ]
      .filter((part) => part !== '')
      .join(' '),
  };
}

/** The `shell` tool's title and description. */
export function shellText(settings: DescribedSettings): { title: string; description: string } {
  const { names, facts } = settings;
  return {
    title: `Run shell commands in a session shell (${facts.short})`,
    description: [
      `Runs shell commands (sh) to completion and returns their exit status and output, like ${names.exec}, in a shell whose working directory and exported variables carry over from one call of this tool to the next in this session: \`cd app\` in one call and \`npm test\` in the next runs in app; \`export\`, and a \`source\`d script's exports (an activated virtualenv's PATH), stay set.`,
      'Only those carry over: plain (unexported) variables, shell functions, aliases, set options, umask and background jobs do not, and a variable of the sandbox\'s environment that a call unset is back in the next call.',
      'The state is saved when the commands end, `exit N` included (the status stays N). It is NOT saved when the call is timed out or cancelled, nor after `exec` or a trap on EXIT of the commands\' own: the next call then starts from the state before it. reset: true starts from the default directory and environment.',
      `One call at a time: a call while another runs is refused. Time limit: ${seconds(settings.defaultTimeoutMs)} by default, up to ${seconds(settings.maxTimeoutMs)} with timeout (milliseconds); when it expires, the commands and everything they started are terminated and the result says TIMED OUT.`,
      `Servers, watchers and anything that may run longer: ${names.start} and ${names.read}. Output longer than about ${settings.budget} characters is cut in the middle, head and tail kept.`,
      facts.text,
    ].join(' '),
  };
}

/** The background tools' titles and descriptions. */
export function jobText(settings: DescribedSettings): (name: JobToolName) => JobToolText {
  const { names, facts } = settings;
  const titles: Record<JobToolName, string> = {
    start: 'Start a background command',
    read: "Read a background command's output",
    write: "Write to a background command's input",
    kill: 'Stop a background command',
    list: 'List the background commands',
    resize: "Resize a background command's terminal",
  };
  const descriptions: Record<JobToolName, string> = {
    start:
      `Starts a command in the background and returns its id at once, for servers, watchers, long builds and interactive programs. It runs, with no time limit, until it exits, ${names.kill} ends it, or this session ends (which ends everything it started). ` +
      `Follow it with ${names.read} (waitMs, until) to see its output; a server started here is reachable from ${names.exec} commands at its port. Each command is a new process: cd and variables do not carry over. ${facts.text}`,
    read:
      `Returns what a background command wrote since the last read (stdout and stderr apart) and whether it still runs, with its exit code once it ended. ` +
      `With waitMs (up to ${MAX_READ_WAIT_MS} ms) it waits for output and answers once the output has been quiet for ${READ_SETTLE_MS} ms, or, with until, once a regular expression appears (e.g. "listening on"), so one read is enough after starting a server. ` +
      `Unread output is kept up to a bound (the oldest bytes dropped past it, and counted); a read longer than about ${settings.budget} characters is cut in the middle.`,
    write: "Writes text, then named keys, to a background command's standard input (on a terminal: types them; ctrl-c interrupts the foreground job); with end: true, closes it.",
    kill: 'Stops a background command and everything it started (SIGTERM, then SIGKILL after a grace period), or sends it one signal. It stays listed, so its last output can still be read.',
    list: 'Lists the background commands of this session, running and ended, with their ids and exit status.',
    resize: 'Sets the terminal size of a background command started with pty (the program gets SIGWINCH).',
  };
  return (name) => ({ title: `${titles[name]} (${facts.short})`, description: descriptions[name] });
}
