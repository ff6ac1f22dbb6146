import { describe, expect, it } from 'vitest';
import { ReportSplitter, SupervisorReportError, parseReport, supervisorArgv, SUPERVISOR, SUPERVISOR_NAME } from '../src/index.js';

const ID = '0123456789abcdef-ID';
const frame = (body: string): string => `\u001esandstream:${ID} ${body}\n`;
const bytes = (text: string): Uint8Array => Buffer.from(text, 'latin1');

describe('parseReport', () => {
  it('reads every report the supervisor writes', () => {
    expect(parseReport('start 41 41 123456 default')).toEqual({ type: 'start', pid: 41, pgid: 41, startTime: '123456', interrupt: 'default' });
    expect(parseReport('noexec ENOENT setsid')).toEqual({ type: 'noexec', reason: 'ENOENT setsid' });
    expect(parseReport('exit code 143')).toEqual({ type: 'exit', status: { kind: 'code', code: 143 } });
    expect(parseReport('exit signal 15 TERM')).toEqual({ type: 'exit', status: { kind: 'signal', number: 15, signal: 'SIGTERM', core: false } });
    expect(parseReport('exit signal 11 SEGV core')).toEqual({ type: 'exit', status: { kind: 'signal', number: 11, signal: 'SIGSEGV', core: true } });
    expect(parseReport('exit unknown')).toEqual({ type: 'exit', status: { kind: 'unknown' } });
    expect(parseReport('gone')).toEqual({ type: 'gone' });
    expect(parseReport('held')).toEqual({ type: 'held' });
  });

  it.each(['', 'start 1 1 x default', 'start 1 1 5', 'exit code 256', 'exit code -1', 'exit signal 0 X', 'exit signal 9 kill', 'gone now', 'held on', 'hello', 'exit code 03'])(
    'rejects %j with a typed error',
    (body) => {
      expect(() => parseReport(body)).toThrow(SupervisorReportError);
    },
  );
});

describe('ReportSplitter', () => {
  const output = 'out \u001e\u001esandstream:other gone\n\u001esandstream:\u00ff\u0000tail';
  const stream = `${frame('start 7 7 99 default')}${output.slice(0, 9)}${frame('exit code 0')}${output.slice(9)}${frame('gone')}`;

  it('cuts the frames out and keeps every other byte, however the stream is split', () => {
    for (let cut = 0; cut <= stream.length; cut++) {
      const splitter = new ReportSplitter(ID);
      const a = splitter.push(bytes(stream.slice(0, cut)));
      const b = splitter.push(bytes(stream.slice(cut)));
      const c = splitter.end();
      const out = Buffer.concat([a.output, b.output, c.output]).toString('latin1');
      expect(out).toBe(output);
      expect([...a.reports, ...b.reports, ...c.reports].map((r) => r.type)).toEqual(['start', 'exit', 'gone']);
    }
  });

  it('hands back a held tail that never became a frame at the end', () => {
    const splitter = new ReportSplitter(ID);
    const a = splitter.push(bytes('x\u001esandstream:0123'));
    expect(Buffer.from(a.output).toString('latin1')).toBe('x');
    expect(Buffer.from(splitter.end().output).toString('latin1')).toBe('\u001esandstream:0123');
  });

  it('fails with a typed error on a frame of its id that does not parse or never ends', () => {
    expect(() => new ReportSplitter(ID).push(bytes(frame('bogus')))).toThrow(SupervisorReportError);
    const open = new ReportSplitter(ID);
    open.push(bytes(`\u001esandstream:${ID} exit co`));
    expect(() => open.end()).toThrow(/without its end/);
    expect(() => new ReportSplitter(ID).push(bytes(`\u001esandstream:${ID} ${'x'.repeat(600)}`))).toThrow(/too long/);
  });
});

describe('supervisorArgv', () => {
  it('puts argv after the script, its name and the id', () => {
    expect(supervisorArgv({ id: ID, argv: ['a b', ''] })).toEqual(['/bin/sh', '-c', SUPERVISOR, SUPERVISOR_NAME, ID, '0', '0', '', '', 'a b', '']);
    expect(supervisorArgv({ id: ID, argv: ['x'], prefix: ['/usr/bin/env', 'A=1'], home: true })).toEqual([
      '/bin/sh', '-c', SUPERVISOR, SUPERVISOR_NAME, ID, '2', '1', '', '', '/usr/bin/env', 'A=1', 'x',
    ]);
  });

  it('rejects an id that could not mark a frame, and an argv without a program', () => {
    expect(() => supervisorArgv({ id: 'short', argv: ['true'] })).toThrow(TypeError);
    expect(() => supervisorArgv({ id: `${ID} x`, argv: ['true'] })).toThrow(TypeError);
    expect(() => supervisorArgv({ id: ID, argv: [] })).toThrow(TypeError);
  });
});
