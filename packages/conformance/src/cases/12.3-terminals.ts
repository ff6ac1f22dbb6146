import type { Process } from '@sandstream/types';
import { check, checkEqual, checkErrorCode, rejectionOf } from '../assert.js';
import { defineCase, type ConformanceCase } from '../case.js';
import { ALL_BYTES, printfFormat } from './support/collect.js';
import { expectGoneNow, explainingSurvivors, readPid, scratch, type Watched } from './support/observe.js';
import { crashOwner } from './support/owner-crash.js';
import { ownerTerminalTree } from './support/owner.js';
import { checkIdentity, endsSoon, fields, IDENTITY, latin1, readyOnTerminal, SIZE, stubbornProcesses, stubbornScript, stubbornSession, TerminalReader } from './support/terminal.js';

/** Terminals: SS-PTY-*. */
export const terminalCases: readonly ConformanceCase[] = [
  defineCase({
    id: 'pty.terminal',
    title: '"the command\'s standard input, output and error MUST be one new pseudo-terminal of the given size": isatty on 0, 1 and 2, tty, stty size, TERM, the foreground group and the initial modes, under run() and stream()',
    requirements: ['SS-PTY-1'],
    needs: ['pty'],
    async run(ctx) {
      const result = await ctx.sandbox.run(['sh', '-c', IDENTITY], { pty: SIZE });
      checkIdentity(latin1(result.stdout), 'xterm-256color', 'run() with pty');
      const named = await ctx.sandbox.run(['sh', '-c', 'echo "term=$TERM"'], { pty: SIZE, env: { TERM: 'vt100' } });
      checkEqual(fields(latin1(named.stdout)).get('term'), 'vt100', 'TERM when env sets it');
      if (!ctx.sandbox.capabilities.streaming) return;
      const dir = await scratch(ctx);
      await using proc = ctx.sandbox.stream(['sh', '-c', `${IDENTITY}\n: > "$1/done"`, 'sh', dir], { pty: SIZE });
      const reader = new TerminalReader(ctx, proc, dir);
      await reader.until(/modes=[^\n]*\n/, 'done', 'the modes a streamed command on a terminal printed');
      checkIdentity(reader.text, 'xterm-256color', 'stream() with pty');
    },
  }),
  defineCase({
    id: 'pty.one-stream',
    title: '"every byte the terminal yields MUST be delivered, exact and in order, as stdout chunks": the line discipline\'s CR LF, then raw mode\'s bare LF, stderr\'s bytes among them, nothing as stderr',
    requirements: ['SS-PTY-2'],
    needs: ['pty'],
    async run(ctx) {
      const script = "printf 'x\\ny'; printf 'e\\n' >&2; stty raw -echo; printf 'x\\ny'";
      const result = await ctx.sandbox.run(['sh', '-c', script], { pty: SIZE });
      checkEqual(latin1(result.stdout), 'x\r\nye\r\nx\ny', 'what the terminal gave: a newline as CR LF in the initial modes, as LF after stty raw');
      checkEqual(result.stderr.byteLength, 0, 'bytes in stderr');
      checkEqual(result.stderrTruncated, false, 'stderrTruncated');
      checkEqual(result.exitCode, 0, 'the exit code');
    },
  }),
  defineCase({
    id: 'pty.last-bytes',
    title: '"what the command wrote before its process tree ended MUST all be delivered, its last bytes included": 2 MB in raw mode, then a marker, as the command exits',
    requirements: ['SS-PTY-2'],
    needs: ['pty', 'streaming'],
    runsAlone: 'it moves 2 MB through a terminal',
    async run(ctx) {
      const count = 2_000_000;
      const dir = await scratch(ctx);
      const script = `stty raw -echo; head -c ${count} /dev/zero | tr '\\000' a; printf END; : > "$1/written"`;
      await using proc = ctx.sandbox.stream(['sh', '-c', script, 'sh', dir], { pty: SIZE });
      const reader = new TerminalReader(ctx, proc, dir);
      const bytes = await reader.rest('written', 'the 2 MB and the marker, to the end of the Process');
      const result = await proc.wait();
      checkEqual(result.exitCode, 0, 'the exit code');
      const tail = latin1(bytes.subarray(Math.max(0, bytes.byteLength - 20)));
      check(bytes.byteLength === count + 3 && tail.endsWith('END'), `the terminal delivered ${bytes.byteLength} bytes of ${count + 3}, ending ${JSON.stringify(tail)}`);
      check(bytes.subarray(0, count).every((byte) => byte === 0x61), 'bytes other than "a" among the first 2 MB');
      checkEqual(reader.stderrBytes, 0, 'bytes delivered as stderr');
    },
  }),
  defineCase({
    id: 'pty.raw-bytes',
    title: '"the bytes given to write() or as input MUST reach the terminal\'s input exactly once, in call order and unfiltered": in raw mode all 256 byte values go in, and all 256 come out',
    requirements: ['SS-PTY-2', 'SS-PTY-3'],
    needs: ['pty', 'streaming', 'stdin'],
    async run(ctx) {
      const after = `head -c 256 | od -An -v -tx1; echo OUT; printf '${printfFormat(ALL_BYTES)}'; printf END`;
      await using started = await readyOnTerminal(ctx, after, { before: 'stty raw -echo; ', stdin: 'pipe' });
      const { proc, reader } = started;
      await proc.stdin!.write(ALL_BYTES);
      await reader.soon('END', 'the 256 bytes read back through od, then 256 written');
      const text = reader.text;
      const read = text.slice(text.indexOf('ready\n') + 6, text.indexOf('OUT\n')).split(/\s+/).filter(Boolean).map((hex) => Number.parseInt(hex, 16));
      const expected = Array.from(ALL_BYTES);
      check(read.length === 256 && read.every((byte, i) => byte === expected[i]), `the command read other bytes than the 256 written: ${JSON.stringify(read.slice(0, 40))}...`);
      const out = reader.bytes.subarray(reader.bytes.indexOf('OUT\n') + 4, reader.bytes.lastIndexOf('END'));
      check(Buffer.from(out).equals(Buffer.from(ALL_BYTES)), `the terminal delivered other bytes than the 256 written (${out.byteLength} bytes: ${Buffer.from(out).subarray(0, 32).toString('hex')}...)`);
      await proc.stdin!.end();
    },
  }),
  defineCase({
    id: 'pty.end-of-file',
    title: '"end() MUST type end-of-file and close the writer, leaving the terminal and its output open": cat ends after end(), after one-shot input, and with no writer at all',
    requirements: ['SS-PTY-3'],
    needs: ['pty'],
    async run(ctx) {
      const noWriter = await ctx.sandbox.run(['cat'], { pty: SIZE, timeout: await ctx.timeoutFor(3_000) });
      check(!noWriter.timedOut, 'cat with no writer never saw end-of-file: it ran until its timeout');
      checkEqual(noWriter.exitCode, 0, 'the exit code of cat with no writer');
      if (ctx.sandbox.capabilities.stdin) {
        const fed = await ctx.sandbox.run(['cat'], { pty: SIZE, input: 'abc', timeout: await ctx.timeoutFor(3_000) });
        check(!fed.timedOut, 'cat given one-shot input "abc" (no newline) never saw end-of-file');
        check(latin1(fed.stdout).includes('abc'), `cat given "abc" did not print it: ${JSON.stringify(latin1(fed.stdout))}`);
      }
      if (!ctx.sandbox.capabilities.stdin || !ctx.sandbox.capabilities.streaming) return;
      await using started = await readyOnTerminal(ctx, 'exec cat', { stdin: 'pipe' });
      const { proc } = started;
      await proc.stdin!.write('abc');
      await proc.stdin!.end();
      check(proc.stdin!.closed, 'the writer is not closed after end()');
      const result = await endsSoon(ctx, proc, 'cat after "abc" and end()');
      checkEqual(result.exitCode, 0, 'the exit code of cat after end()');
    },
  }),
  defineCase({
    id: 'pty.interrupt',
    title: '"MUST reach the terminal\'s input exactly once, in call order and unfiltered": 0x03 interrupts the foreground job, which ends by SIGINT, or by the code it chose',
    requirements: ['SS-PTY-3', 'SS-PTY-6'],
    needs: ['pty', 'streaming', 'stdin'],
    async run(ctx) {
      {
        await using started = await readyOnTerminal(ctx, 'exec cat', { stdin: 'pipe' });
        const { proc } = started;
        await proc.stdin!.write('\x03');
        const result = await endsSoon(ctx, proc, 'cat after 0x03');
        checkEqual(result.signal, 'SIGINT', 'the signal that ended cat after 0x03');
      }
      await using started = await readyOnTerminal(ctx, 'while :; do sleep 1 & wait $!; done', { before: 'trap "exit 7" INT; ', stdin: 'pipe' });
      const { proc } = started;
      await proc.stdin!.write('\x03');
      const result = await endsSoon(ctx, proc, 'a shell trapping SIGINT after 0x03');
      checkEqual(result.exitCode, 7, 'the exit code a shell trapping SIGINT chose');
    },
  }),
  defineCase({
    id: 'pty.resize',
    title: '"proc.resize(cols, rows) MUST set the terminal\'s size and resolve once it is set": the foreground group gets SIGWINCH and sees the new size; bad sizes, pipes and a settled Process are refused',
    requirements: ['SS-PTY-4'],
    needs: ['pty', 'streaming'],
    async run(ctx) {
      const started = await readyOnTerminal(ctx, 'while :; do sleep 1 & wait $!; done', { before: 'trap \'echo "size=$(stty size)"\' WINCH; ' });
      const { proc, reader } = started;
      try {
        check(typeof proc.resize === 'function', 'a Process on a terminal has no resize()');
        await proc.resize(120, 40);
        await reader.soon('size=40 120', 'the size a SIGWINCH trap printed after resize(120, 40)');
        checkErrorCode(await rejectionOf(proc.resize(0, 40), 'resize(0, 40)'), 'INVALID_ARGUMENT', 'resize(0, 40)');
        checkErrorCode(await rejectionOf(proc.resize(80, 65_536), 'resize(80, 65536)'), 'INVALID_ARGUMENT', 'resize(80, 65536)');
      } finally {
        await proc[Symbol.asyncDispose]();
      }
      checkErrorCode(await rejectionOf(proc.resize!(80, 24), 'resize() once settled'), 'INVALID_STATE', 'resize() once the Process settled');
      await using piped = ctx.sandbox.stream(['sh', '-c', 'exec sleep 60']);
      if (piped.resize !== undefined) checkErrorCode(await rejectionOf(piped.resize(80, 24), 'resize() on pipes'), 'INVALID_STATE', 'resize() on a Process without a terminal');
    },
  }),
  defineCase({
    id: 'pty.session-ends',
    title: '"every exit path of section 9.1 MUST end the terminal\'s whole session": a command ignoring SIGHUP and SIGTERM and its job in a group of its own, after disposal, timeout and abort',
    requirements: ['SS-PTY-5'],
    needs: ['pty', 'streaming'],
    async run(ctx) {
      // Disposal is held to a session that ignores SIGTERM too (gone only by SIGKILL, after the
      // grace period); the timeout and the abort to one that ignores SIGHUP alone, which SIGTERM,
      // sent to the whole session right after it, ends at once.
      type Path = { what: string; ignored: 'HUP' | 'HUP TERM'; options: () => Promise<{ timeout?: number; signal?: AbortSignal }>; end(proc: Process, controller: AbortController): Promise<void> };
      const paths: Path[] = [
        { what: 'disposal', ignored: 'HUP TERM', options: async () => ({}), end: (proc) => proc[Symbol.asyncDispose]() },
        {
          what: 'the timeout',
          ignored: 'HUP',
          options: async () => ({ timeout: await ctx.timeoutFor(1_500) }),
          async end(proc) {
            const result = await proc.wait();
            check(result.timedOut, 'timedOut is not true after the timeout elapsed');
          },
        },
        {
          what: 'the abort',
          ignored: 'HUP',
          options: async () => ({}),
          async end(proc, controller) {
            controller.abort(new Error('caller gave up'));
            checkErrorCode(await rejectionOf(proc.wait(), 'wait() after abort'), 'ABORTED', 'wait() after abort');
          },
        },
      ];
      for (const path of paths) {
        const controller = new AbortController();
        const session = await stubbornSession(ctx, path.ignored, { ...(await path.options()), signal: controller.signal });
        try {
          await explainingSurvivors(ctx, session.processes, session.dir, `${path.what} of a command on a terminal`, () => path.end(session.proc, controller));
          await expectGoneNow(ctx, session.processes, session.dir, `when ${path.what} of a command on a terminal was done`);
        } finally {
          await session.proc[Symbol.asyncDispose]().catch(() => undefined);
        }
      }
    },
  }),
  defineCase({
    id: 'pty.leader-exit',
    title: '"when the command exits and leaves processes of its session behind, its status is the result": a job ignoring SIGHUP, in a group of its own, is gone when the result is known',
    requirements: ['SS-PTY-6', 'SS-PTY-5'],
    needs: ['pty'],
    async run(ctx) {
      const dir = await scratch(ctx);
      const script = [
        "trap '' HUP",
        'set -m 2>/dev/null',
        'sh -c \'echo $$ > "$0/job"; while :; do sleep 1; done\' "$1" &',
        'while [ ! -s "$1/job" ]; do sleep 0.05; done',
        'exit 3',
      ].join('\n');
      const result = await ctx.sandbox.run(['sh', '-c', script, 'sh', dir], { pty: SIZE });
      checkEqual(result.exitCode, 3, "the result's exit code: the command's own");
      checkEqual(result.signal, null, "the result's signal");
      const job = await readPid(ctx, `${dir}/job`, 'the job');
      await expectGoneNow(ctx, [{ pid: job, role: 'a job the command left, ignoring SIGHUP' }], dir, 'when run() resolved');
    },
  }),
  defineCase({
    id: 'pty.status',
    title: '"the result MUST be the command\'s own status: the code it exited with, or the signal that ended it": exit 130 against kill -INT $$ and kill -TERM $$',
    requirements: ['SS-PTY-6'],
    needs: ['pty'],
    async run(ctx) {
      const code = await ctx.sandbox.run(['sh', '-c', 'exit 130'], { pty: SIZE });
      check(code.exitCode === 130 && code.signal === null, `exit 130 reported as exit code ${code.exitCode}, signal ${code.signal}`);
      for (const signal of ['INT', 'TERM'] as const) {
        const killed = await ctx.sandbox.run(['sh', '-c', `kill -${signal} $$`], { pty: SIZE });
        check(killed.signal === `SIG${signal}` && killed.exitCode === null, `kill -${signal} $$ reported as exit code ${killed.exitCode}, signal ${killed.signal}`);
      }
    },
  }),
  defineCase({
    id: 'pty.live',
    title: '"the command\'s standard input, output and error MUST be one new pseudo-terminal": a program that buffers a pipe shows each line at once, before it exits',
    requirements: ['SS-PTY-1'],
    needs: ['pty', 'streaming', 'stdin'],
    async run(ctx) {
      // grep writes through stdio, which buffers a pipe until it exits and a terminal line by
      // line, and reads a line at a time (sed would not do: busybox's reads a line ahead, to know
      // the last one). Echo is off, so what arrives is grep's own line.
      await using started = await readyOnTerminal(ctx, 'exec grep fir', { before: 'stty -echo 2>/dev/null; ', stdin: 'pipe' });
      const { proc, reader } = started;
      await proc.stdin!.write('first\r');
      await reader.soon(/ready\r?\n[^]*first/, "grep's first line, while it still runs");
      await proc.stdin!.end();
      const result = await endsSoon(ctx, proc, 'grep after end()');
      checkEqual(result.exitCode, 0, 'the exit code of grep, which found a line');
    },
  }),
  defineCase({
    id: 'pty.owner-crash',
    title: '"A foreground command MUST NOT outlive its owner": on a terminal, an owner process killed with SIGKILL while its command, ignoring SIGHUP, and a job in a process group of its own run; the whole session is gone within termination.ownerLossMs, SIGTERM first',
    requirements: ['SS-PTY-5', 'SS-OWNER-1'],
    needs: ['pty', 'streaming'],
    runsAlone: 'it starts a second process and measures how soon a tree is gone against the bound of owner loss',
    timeoutMs: 90_000,
    async run(ctx) {
      // The hangup of a terminal whose owner died ends none of this tree; what watches the owner
      // must end the whole session, the job's group included (spec 1.5 section 12.3).
      await crashOwner(ctx, 'pty', ownerTerminalTree, 'command on a terminal');
    },
  }),
  defineCase({
    id: 'pty.background',
    title: '"every exit path of section 9.1 MUST end the terminal\'s whole session": a background command on a terminal is listed with the size last set, and its whole session ends with its disposal',
    requirements: ['SS-PTY-5', 'SS-PTY-4'],
    needs: ['pty', 'streaming', 'attach'],
    async run(ctx) {
      const dir = await scratch(ctx);
      const proc = ctx.sandbox.stream(['sh', '-c', stubbornScript('HUP'), 'sh', dir], { pty: SIZE, background: true });
      const processes: Watched[] = [];
      try {
        processes.push(...(await stubbornProcesses(ctx, dir, 'HUP')));
        const listed = async (): Promise<unknown> => (await ctx.sandbox.commands!()).find((info) => info.commandId === proc.commandId)?.terminal;
        checkEqual(JSON.stringify(await listed()), JSON.stringify(SIZE), 'the terminal commands() lists for it');
        if (proc.resize !== undefined) {
          await proc.resize(90, 30);
          checkEqual(JSON.stringify(await listed()), JSON.stringify({ cols: 90, rows: 30 }), 'the terminal commands() lists after resize(90, 30)');
        }
      } finally {
        await explainingSurvivors(ctx, processes, dir, 'the disposal of a background command on a terminal', () => proc[Symbol.asyncDispose]());
      }
      await expectGoneNow(ctx, processes, dir, 'when the disposal of a background command on a terminal resolved');
    },
  }),
];
