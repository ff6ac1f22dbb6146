/**
 * The start string and the prelude filter, without a server: quoting that a
 * real shell reads back exactly, the staged form past the inline limit, and
 * marks found across chunk boundaries.
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { InvalidArgument } from '@sandstream/types';
import { INLINE_LIMIT, NO_DIRECTORY_MARK, PreludeFilter, READY_MARK, STORED_MARK, quote, startLine } from '../src/start-line.js';
import { resolveSshOptions } from '../src/options.js';

describe('startLine', () => {
  it('quotes every word so that sh reads it back exactly', () => {
    const words = ["it's", 'a b', 'x\ny', '', '$HOME `id` $(id) \\ " \' * ? [a] ~ ; & | < > ( ) { } !', 'é€😀'];
    const { command, staged } = startLine({ argv: ['printf', '%s\\0', ...words], env: { GREETING: "it's", 'NOT-AN-IDENTIFIER': 'x' }, cwd: undefined, stdin: true }, 'id1');
    expect(staged).toBeUndefined();
    const out = execFileSync('/bin/sh', ['-c', command], { encoding: 'utf8' });
    expect(out.startsWith(READY_MARK)).toBe(true);
    expect(out.slice(READY_MARK.length).split('\0').slice(0, -1)).toEqual(words);
    const env = execFileSync('/bin/sh', ['-c', startLine({ argv: ['/bin/sh', '-c', 'printf %s "$GREETING"'], env: { GREETING: "it's" }, cwd: '/', stdin: true }, 'id2').command], { encoding: 'utf8' });
    expect(env).toBe(`${READY_MARK}it's`);
  });

  it('gives a command that does not read the channel /dev/null as its standard input', () => {
    const { command } = startLine({ argv: ['/bin/sh', '-c', 'readlink /proc/$$/fd/0'], env: {}, cwd: undefined, stdin: false }, 'id4');
    expect(execFileSync('/bin/sh', ['-c', command], { encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] })).toBe(`${READY_MARK}/dev/null\n`);
  });

  it('refuses a directory that cannot be entered with its mark and status 125', () => {
    const { command } = startLine({ argv: ['true'], env: {}, cwd: '/no/such/dir', stdin: false }, 'id3');
    let status = 0;
    let stderr = '';
    try {
      execFileSync('/bin/sh', ['-c', command], { stdio: 'pipe' });
    } catch (error) {
      status = (error as { status: number }).status;
      stderr = String((error as { stderr: Buffer }).stderr);
    }
    expect([status, stderr]).toEqual([125, NO_DIRECTORY_MARK]);
  });

  it('stages a start past the inline limit through a file that the start removes', () => {
    const big = 'w'.repeat(INLINE_LIMIT);
    const { command, staged } = startLine({ argv: ['printf', '%s', big], env: {}, cwd: undefined, stdin: true }, 'abc', '/tmp/.test-start-');
    expect(staged?.path).toBe('/tmp/.test-start-abc');
    expect(command).toBe(`. ${quote('/tmp/.test-start-abc')}`);
    expect(command.length).toBeLessThan(100);
    expect(execFileSync('/bin/sh', ['-c', staged!.upload], { input: staged!.script, encoding: 'utf8' })).toBe(STORED_MARK);
    expect(execFileSync('/bin/sh', ['-c', command], { encoding: 'utf8' })).toBe(`${READY_MARK}${big}`);
    expect(() => execFileSync('test', ['-e', staged!.path])).toThrow();
  });
});

describe('PreludeFilter', () => {
  it('drops what comes before the mark, also when the mark is split across chunks, and passes the rest untouched', () => {
    const filter = new PreludeFilter();
    const stream = Buffer.from(`motd line\n${READY_MARK}command bytes \x1e`);
    const passed: Buffer[] = [];
    for (let i = 0; i < stream.length; i += 3) {
      const out = filter.push(stream.subarray(i, i + 3));
      if (out !== undefined) passed.push(out);
    }
    expect(Buffer.concat(passed).toString()).toBe('command bytes \x1e');
    expect(filter.noise).toBe('motd line');
    expect(filter.refused).toBe(false);
  });

  it('tells a refusal mark from the ready mark', () => {
    const filter = new PreludeFilter();
    expect(filter.push(Buffer.from(NO_DIRECTORY_MARK))).toBeUndefined();
    expect([filter.through, filter.refused]).toEqual([true, true]);
  });
});

describe('resolveSshOptions', () => {
  const key = { host: 'h', privateKey: 'k' };
  it.each([
    [{ ...key, port: 0 }, 'port'],
    [{ ...key, port: 1.5 }, 'port'],
    [{ ...key, user: 'root' }, 'user'],
    [{ ...key, colour: 'blue' }, 'colour'],
    [{ host: '' }, 'host'],
    [{ ...key, privateKeyPath: '/no/such/key' }, 'privateKeyPath'],
    [{ ...key, hostFingerprint: 3 }, 'hostFingerprint'],
    [{ ...key, channelsPerConnection: 0 }, 'channelsPerConnection'],
  ])('refuses %j naming %s', (options, name) => {
    const error = (() => {
      try {
        resolveSshOptions(options as never);
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(InvalidArgument);
    expect((error as InvalidArgument).key).toBe(name);
  });

  it('asks for a way to authenticate when there is no key and no agent', () => {
    const saved = process.env['SSH_AUTH_SOCK'];
    delete process.env['SSH_AUTH_SOCK'];
    try {
      expect(() => resolveSshOptions({ host: 'h' })).toThrow(/authenticate/);
    } finally {
      if (saved !== undefined) process.env['SSH_AUTH_SOCK'] = saved;
    }
  });
});
