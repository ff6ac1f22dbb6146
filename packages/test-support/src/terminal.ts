/**
 * The terminal checks every remote transport with `pty` runs on its backend (spec 1.5, ADR-0052),
 * beside the kit's `pty.*` cases: a command's terminal bytes, size, `TERM` and exact status,
 * `resize()` before input, and a signal's status under a terminal; a background command's terminal
 * (util-linux's `script` in the sandbox), and its refusal where there is no `script`.
 */
import type { Sandbox } from '@sandstream/types';
import { expect } from 'vitest';
import { waitFor } from './timing.js';

/** Runs the check on `sb`, whose manifest declares `pty`; fails the calling test on any difference. */
export async function expectTerminalBasics(sb: Sandbox): Promise<void> {
  const result = await sb.run(['sh', '-c', 'for fd in 0 1 2; do [ -t $fd ] && printf y; done; echo; stty size; echo "$TERM"; echo err >&2; exit 3'], { pty: { cols: 91, rows: 31 } });
  expect(result).toMatchObject({ exitCode: 3, signal: null, stderrText: '' });
  expect(result.stdoutText).toBe('yyy\r\n31 91\r\nxterm-256color\r\nerr\r\n');
  const proc = sb.stream(['sh', '-c', 'read x; stty size'], { pty: { cols: 80, rows: 24 }, stdin: 'pipe' });
  let text = '';
  const read = (async () => {
    for await (const chunk of proc) text += Buffer.from(chunk.data).toString('latin1');
  })();
  await proc.started();
  await proc.resize!(120, 40);
  await proc.stdin!.write('\r');
  expect((await proc.wait()).exitCode).toBe(0);
  await read;
  expect(text).toBe('\r\n40 120\r\n');
  expect(await sb.run(['sh', '-c', 'kill -TERM $$'], { pty: { cols: 80, rows: 24 } })).toMatchObject({ exitCode: null, signal: 'SIGTERM' });
}

/** Text of a background Process's terminal, read as it comes, to wait for a line in it. */
class TerminalText {
  text = '';
  readonly done: Promise<void>;
  constructor(proc: AsyncIterable<{ readonly data: Uint8Array }>) {
    this.done = (async () => {
      for await (const chunk of proc) this.text += Buffer.from(chunk.data).toString('latin1');
    })();
  }

  /** Resolves once `needle` arrived; fails after `ms` with what did. */
  waitFor(needle: string, ms = 20_000): Promise<void> {
    return waitFor(() => this.text.includes(needle), ms, () => `${JSON.stringify(needle)} did not arrive; the terminal showed ${JSON.stringify(this.text)}`);
  }
}

/**
 * The background terminal check (spec 1.5 with 13): a background command on a terminal of the
 * size asked, its size listed by `commands()` and changed by `resize()` from the Process that
 * started it and from one `attach()` made on `other` (a second handle on the same environment),
 * each resize a SIGWINCH; end-of-file at once for a command nobody writes to; an exact status; the
 * environment a foreground command on a terminal gets.
 */
export async function expectBackgroundTerminal(sb: Sandbox, other: Sandbox): Promise<void> {
  const script = 'trap \'printf "winch %s\\n" "$(stty size)"\' WINCH; [ -t 0 ] && [ -t 1 ] && printf "tty %s\\n" "$(stty size)"; echo "$TERM"; while :; do sleep 0.05; done';
  const proc = sb.stream(['sh', '-c', script], { pty: { cols: 83, rows: 23 }, background: true });
  const seen = new TerminalText(proc);
  try {
    await proc.started();
    await seen.waitFor('xterm-256color\r\n');
    expect(seen.text).toContain('tty 23 83\r\n');
    const listed = async (): Promise<unknown> => {
      const infos = await sb.commands!();
      const info = infos.find((candidate) => candidate.commandId === proc.commandId);
      if (info === undefined) throw new Error(`commands() does not list ${proc.commandId}: ${JSON.stringify(infos)}`);
      return info.terminal;
    };
    expect(await listed()).toEqual({ cols: 83, rows: 23 });
    await proc.resize!(100, 40);
    await seen.waitFor('winch 40 100\r\n');
    expect(await listed()).toEqual({ cols: 100, rows: 40 });
    const attached = await other.attach!(proc.commandId!);
    await attached.resize!(120, 50);
    await seen.waitFor('winch 50 120\r\n');
    expect(await listed()).toEqual({ cols: 120, rows: 50 });
    await attached.detach();
  } finally {
    await proc[Symbol.asyncDispose]();
  }
  await seen.done.catch(() => undefined);
  // Nobody writes to it: `cat` reads end-of-file at once.
  await using cat = sb.stream(['cat'], { pty: { cols: 80, rows: 24 }, background: true });
  expect(await cat.wait()).toMatchObject({ exitCode: 0, signal: null });
  await using status = sb.stream(['sh', '-c', 'exit 7'], { pty: { cols: 80, rows: 24 }, background: true });
  expect(await status.wait()).toMatchObject({ exitCode: 7, signal: null });
  // The environment a foreground command on a terminal gets, SHELL included (the one the sandbox
  // gives, or none), whatever holds the background terminal; the tag is each command's own.
  const environment = ['sh', '-c', 'echo "SHELL=${SHELL-unset}"; env | sort | grep -v "^_=\\|^SANDSTREAM_COMMAND=\\|^SHLVL=\\|^PWD=\\|^OLDPWD="'];
  const foreground = (await sb.run(environment, { pty: { cols: 80, rows: 24 } })).stdoutText;
  await using background = sb.stream(environment, { pty: { cols: 80, rows: 24 }, background: true });
  const shown = new TerminalText(background);
  await background.wait();
  await shown.done;
  expect(shown.text).toBe(foreground);
}

/**
 * The refusal of a background command on a terminal by `sb`, whose `scriptPath` names no program
 * (`missing`): `SpawnFailed` naming it, and no record left to list.
 */
export async function expectNoScriptRefusal(sb: Sandbox, missing: string): Promise<void> {
  const proc = sb.stream(['sh', '-c', 'echo ran'], { pty: { cols: 80, rows: 24 }, background: true });
  await expect(proc.wait()).rejects.toMatchObject({ code: 'SPAWN_FAILED', message: expect.stringContaining(JSON.stringify(missing)) });
  expect((await sb.commands!()).map((info) => info.argv)).not.toContainEqual(['sh', '-c', 'echo ran']);
}
