/**
 * Terminals in the isolated mode (isolation/terminal.ts): the terminal is
 * the sandbox's own, made in its devpts; the command's variables arrive as
 * in the plain mode, SHELL included; nothing of the terminal's machinery
 * outlives the result; and where a tool is missing, the manifest says why.
 * The conformance kit's `pty.*` cases run against this mode in
 * conformance-isolated.test.ts.
 */
import { statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { unless } from '@sandstream/test-support/skips';
import type { LocalSandboxOptions } from '../src/index.js';
import { probe, type IsolationSupport } from '../src/isolation/probe.js';
import { HOLDER_SCRIPT, isolatedTerminalTools } from '../src/isolation/terminal.js';
import { shellcheckMissing, shellcheckSh, testSandbox } from './helpers.js';

const isolated = (options: LocalSandboxOptions = {}) => testSandbox({ isolation: 'namespaces', ...options });
const SIZE = { cols: 101, rows: 37 };

/** The `key=value` words a command printed on a terminal, by key. */
function fields(text: string): Map<string, string> {
  return new Map(text.split(/\s+/).filter((word) => word.includes('=')).map((word) => [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)]));
}

describe("isolation: 'namespaces', terminals", () => {
  it("a command's terminal is one of the sandbox's own devpts, which holds none of the host's", async () => {
    const sb = isolated();
    expect(sb.capabilities.pty).toBe(true);
    expect(sb.native.ptyUnavailable).toBeUndefined();
    const script = 'echo "tty=$(tty) device=$(stat -c %d "$(tty)") pts=$(stat -c %d /dev/pts) entries=$(ls /dev/pts | tr "\\n" ,)"';
    const seen = fields((await sb.run(['sh', '-c', script], { pty: SIZE })).stdoutText);
    expect(seen.get('tty')).toMatch(/^\/dev\/pts\/\d+$/);
    // The terminal is on the sandbox's /dev/pts, a devpts other than the host's.
    expect(seen.get('device')).toBe(seen.get('pts'));
    expect(Number(seen.get('pts'))).not.toBe(statSync('/dev/pts').dev);
    expect(seen.get('entries')).toBe(`${seen.get('tty')!.slice('/dev/pts/'.length)},ptmx,`);
  });

  it('the variables arrive as in the plain mode under a terminal, SHELL and TERM included', async () => {
    const envOf = async (sb: ReturnType<typeof testSandbox>, env: Record<string, string>): Promise<string[]> =>
      (await sb.run(['env', '-0'], { env, pty: SIZE })).stdoutText.split('\0').filter((entry) => entry !== '' && !/^(HOME|TMPDIR|PWD|PATH|LANG|LC_[A-Z]+)=/.test(entry)).sort();
    const sb = isolated();
    const plain = testSandbox({ hostEnv: [] });
    // Among them the names the holder's own steps use (terminal.ts), which must not reach the command changed.
    const holders = { job: 'j', holder: 'h', tries: 't', group: 'g', foreground: 'f', state: 's', _: 'u' };
    for (const env of [{}, { SHELL: '/bin/bash' }, { SHELL: '', TERM: 'vt100' }, { 'NOT-AN-IDENTIFIER': '1', SHELL: 'a b' }, holders]) {
      const inside = await envOf(sb, env);
      expect(inside).toEqual(await envOf(plain, env));
      expect(inside.filter((entry) => /^SANDSTREAM_(TERMINAL|V_|ENTRY)/.test(entry))).toEqual([]);
    }
  });

  it("nothing of the terminal's making outlives the result: the session's shell and the holder are gone", async () => {
    const sb = isolated();
    // The command's parent is the holder; its session's leader, the shell under script.
    const result = await sb.run(['sh', '-c', 'read -r _ _ _ parent _ session _ < /proc/$$/stat; echo "parent=$parent session=$session"; exit 7'], { pty: SIZE });
    expect(result.exitCode).toBe(7);
    const seen = fields(result.stdoutText);
    expect(Number(seen.get('parent'))).toBeGreaterThan(1);
    const left = await sb.run(['sh', '-c', 'for pid do [ ! -e "/proc/$pid" ] || echo "left $pid $(tr "\\0" " " < "/proc/$pid/cmdline")"; done', 'sh', seen.get('parent')!, seen.get('session')!]);
    expect(left.stdoutText).toBe('');
  });

  it('a write after end() is StdinClosed; resize() after the end is refused', async () => {
    const sb = isolated();
    await using proc = sb.stream(['sh', '-c', 'read -r line; echo "got $line"'], { pty: SIZE, stdin: 'pipe' });
    await proc.stdin!.write('x\r');
    await proc.stdin!.end();
    await expect(proc.stdin!.write('y')).rejects.toMatchObject({ code: 'STDIN_CLOSED' });
    const result = await proc.wait();
    expect(result.exitCode).toBe(0);
    await expect(proc.resize!(90, 30)).rejects.toMatchObject({ code: 'INVALID_STATE' });
  });
});

describe("isolation: 'namespaces', where terminals cannot be made", () => {
  const found = probe();
  const support = found instanceof Error ? undefined : found;
  // On CI the test runs (and fails where the machine cannot make the namespaces) instead of skipping.
  const blocker = support === undefined && process.env['CI'] === undefined ? 'isolation is unavailable here' : undefined;
  unless(it, blocker)('the sandbox declares no pty, and says why', () => {
    const base = support as IsolationSupport;
    expect(isolatedTerminalTools({ ...base, devpts: false })).toEqual({ unavailable: expect.stringMatching(/devpts/) });
    expect(isolatedTerminalTools(base, (name) => (name === 'script' ? undefined : `/usr/bin/${name}`))).toEqual({ unavailable: expect.stringMatching(/script/) });
    expect(isolatedTerminalTools(base, (name) => (name === 'stty' ? undefined : `/usr/bin/${name}`))).toEqual({ unavailable: expect.stringMatching(/stty/) });
  });

  unless(it, shellcheckMissing)("the holder's script is clean under shellcheck -s sh", () => {
    expect(shellcheckSh(HOLDER_SCRIPT)).toEqual({ said: '', status: 0 });
  });
});
