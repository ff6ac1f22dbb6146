/**
 * The supervisor's terminal mode (spec 1.5, ADR-0052), under dash, bash and busybox ash: started as
 * a backend with a terminal starts it (the leader of a new session on a new pseudo-terminal;
 * python's pty module stands in), it keeps the session and runs the command as the leader of the
 * terminal's foreground group, with its reports in the record, not on the terminal.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ReportSplitter, supervisorArgv, type SupervisorReport } from '../src/index.js';
import { missing, TESTED_SHELLS } from './harness.js';

const ON_TERMINAL = fileURLToPath(new URL('./fixtures/on-terminal.py', import.meta.url));

interface Run {
  /** The terminal's bytes, with CR LF made LF. */
  readonly text: string;
  readonly reports: SupervisorReport[];
  /** The supervisor's own wait status. */
  readonly status: number;
}

/** Runs argv under the supervisor on a terminal; `input` is typed `at` seconds in. */
function onTerminal(shell: string, argv: string[], input?: { bytes: string; at: number }, size?: { cols: number; rows: number }): Promise<Run> {
  const id = randomUUID();
  const record = join(tmpdir(), `.sandstream-test-${id}`);
  const full = supervisorArgv({ id, argv, shell, terminal: { record, size } });
  const env = { ...process.env, ...(input === undefined ? {} : { INPUT: Buffer.from(input.bytes, 'latin1').toString('hex'), AT: String(input.at) }) };
  return new Promise((resolve, reject) => {
    execFile('python3', [ON_TERMINAL, ...full], { env, timeout: 30_000 }, (error, stdout) => {
      if (error !== null) return reject(error);
      try {
        const { output, status } = JSON.parse(stdout) as { output: string; status: number };
        const splitter = new ReportSplitter(id);
        const split = splitter.push(readFileSync(join(record, 'err')));
        const reports = [...split.reports, ...splitter.end().reports];
        expect(split.output.byteLength).toBe(0);
        expect(readFileSync(join(record, 'pid'), 'utf8')).toMatch(/^\d+ \d+\n$/);
        resolve({ text: output.replaceAll('\r\n', '\n'), reports, status });
      } catch (failure) {
        reject(failure);
      } finally {
        rmSync(record, { recursive: true, force: true });
      }
    });
  });
}

const IDS = 'read -r l < /proc/self/stat; set -- ${l##*) }; echo "ids=$$ $3 $4 $6"; for fd in 0 1 2; do [ -t $fd ] && echo "tty$fd"; done; echo "size=$(stty size)"';

for (const shell of TESTED_SHELLS) {
  const why = missing(shell);
  describe.skipIf(why !== undefined)(`the supervisor on a terminal under ${shell.name}${why === undefined ? '' : ` (${why})`}`, () => {
    it('runs the command as the leader of the foreground group in its own session, its reports in the record, its exit code exact', async () => {
      const run = await onTerminal(shell.path!, ['sh', '-c', `${IDS}; exit 3`]);
      const [pid, pgrp, sid, tpgid] = /ids=(\d+) (\d+) (\d+) (\d+)/.exec(run.text)!.slice(1);
      expect(pgrp).toBe(pid);
      expect(tpgid).toBe(pid);
      expect(sid).not.toBe(pid); // the supervisor keeps the session (ADR-0052, 7a)
      expect(run.text).toContain('tty0\ntty1\ntty2\n');
      expect(run.text).not.toContain('sandstream:');
      expect(run.reports.map((r) => r.type)).toEqual(['start', 'exit', 'gone']);
      expect(run.reports[0]).toMatchObject({ type: 'start', pid: Number(pid), pgid: Number(pid) });
      expect(run.reports[1]).toMatchObject({ status: { kind: 'code', code: 3 } });
      expect(run.status >> 8).toBe(3);
    });

    it("sets the terminal's size itself before the command starts (python's terminal is 0x0)", async () => {
      const run = await onTerminal(shell.path!, ['stty', 'size'], undefined, { cols: 101, rows: 37 });
      expect(run.text).toBe('37 101\n');
    });

    it('reports a death by signal as the signal, not 128+n', async () => {
      const run = await onTerminal(shell.path!, ['sh', '-c', 'kill -TERM $$']);
      expect(run.reports.find((r) => r.type === 'exit')).toMatchObject({ status: { kind: 'signal', number: 15 } });
      const code = await onTerminal(shell.path!, ['sh', '-c', 'exit 130']);
      expect(code.reports.find((r) => r.type === 'exit')).toMatchObject({ status: { kind: 'code', code: 130 } });
    });

    it('lets ^C typed on the terminal interrupt the command, which ends by SIGINT at once', async () => {
      const started = Date.now();
      const run = await onTerminal(shell.path!, ['cat'], { bytes: '\x03', at: 0.8 });
      expect(run.reports.find((r) => r.type === 'exit')).toMatchObject({ status: { kind: 'signal', number: 2 } });
      // The waker, not a poll, sees the end: well under the 500 ms a poll may take by then.
      expect(Date.now() - started).toBeLessThan(2_000);
    });

    it('reports held when the command leaves a job of its session behind, and gone once that ends', async () => {
      const run = await onTerminal(shell.path!, ['sh', '-c', 'sleep 0.5 & exit 4']);
      expect(run.reports.map((r) => r.type)).toEqual(['start', 'exit', 'held', 'gone']);
    });
  });
}
