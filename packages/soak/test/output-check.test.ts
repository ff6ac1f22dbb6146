/** The output check: exact prefixes, exact ends, and the one difference a text-only adapter may show. */
import { describe, expect, it } from 'vitest';
import { OutputCheck } from '../src/output-check.js';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
const empty = new Uint8Array(0);

describe('OutputCheck', () => {
  it('accepts an exact prefix, and at the end only the whole', () => {
    const check = new OutputCheck({ stdout: bytes('hello world'), stderr: empty });
    check.accept({ stream: 'stdout', data: bytes('hello') });
    expect(check.prefixProblem()).toBeUndefined();
    expect(check.complete()).toBe(false);
    expect(check.completeProblems()).toEqual([expect.stringMatching(/^stdout: sha256 \w+ over 5 bytes, the command wrote sha256 \w+ over 11 bytes$/)]);
  });

  it('names the first differing byte, and bytes beyond what was written', () => {
    const check = new OutputCheck({ stdout: bytes('abc'), stderr: bytes('x') });
    check.accept({ stream: 'stdout', data: bytes('abd') });
    expect(check.prefixProblem()).toMatch(/^stdout: byte 2 is 0x64, the command wrote 0x63/);
    const extra = new OutputCheck({ stdout: empty, stderr: bytes('x') });
    extra.accept({ stream: 'stderr', data: bytes('xy') });
    expect(extra.prefixProblem()).toMatch(/^stderr: 1 byte\(s\) more than the 1 written, from offset 1/);
  });

  it('lets a text-only stream cut inside a character end with one U+FFFD, and nothing else', () => {
    const written = bytes('ab€cd'); // € is e2 82 ac
    const cut = new Uint8Array([...bytes('ab'), 0xef, 0xbf, 0xbd]);
    const text = new OutputCheck({ stdout: written, stderr: empty }, true);
    text.accept({ stream: 'stdout', data: cut });
    expect(text.prefixProblem()).toBeUndefined();
    const binary = new OutputCheck({ stdout: written, stderr: empty }, false);
    binary.accept({ stream: 'stdout', data: cut });
    expect(binary.prefixProblem()).toMatch(/byte 2/);
    // Not at the very end: a real difference.
    const middle = new OutputCheck({ stdout: written, stderr: empty }, true);
    middle.accept({ stream: 'stdout', data: new Uint8Array([...cut, 0x63]) });
    expect(middle.prefixProblem()).toMatch(/byte 2/);
  });
});

describe('OutputCheck, commands ended early', () => {
  it("lets stderr end with the shell's notice of a child killed by a signal, and nothing else", () => {
    const notice = new OutputCheck({ stdout: empty, stderr: bytes('partial line\n') });
    notice.accept({ stream: 'stderr', data: bytes('partial Terminated\nKilled\n') });
    expect(notice.prefixProblem()).toBeUndefined();
    const other = new OutputCheck({ stdout: empty, stderr: bytes('partial line\n') });
    other.accept({ stream: 'stderr', data: bytes('partial Terminated\nsomething else\n') });
    expect(other.prefixProblem()).toMatch(/^stderr: byte 8/);
    const onStdout = new OutputCheck({ stdout: bytes('abc'), stderr: empty });
    onStdout.accept({ stream: 'stdout', data: bytes('Terminated\n') });
    expect(onStdout.prefixProblem()).toMatch(/^stdout: byte 0/);
  });

  it("lets the shell's notice come in the middle of stderr, when the shell writes on after its child was signalled, and nothing else", () => {
    const written = bytes('line 1\nline 2\nline 3\n');
    const middle = new OutputCheck({ stdout: empty, stderr: written });
    for (const piece of ['line 1\nli', 'ne 2\nTermin', 'ated\nline 3', '\n']) middle.accept({ stream: 'stderr', data: bytes(piece) });
    expect(middle.prefixProblem()).toBeUndefined();
    // The rest after the notice must still be what the command wrote.
    const wrong = new OutputCheck({ stdout: empty, stderr: written });
    wrong.accept({ stream: 'stderr', data: bytes('line 1\nTerminated\nline 9\n') });
    expect(wrong.prefixProblem()).toMatch(/^stderr: byte 7/);
    // A command read to its end is held to every byte: a notice is a difference there.
    expect(middle.completeProblems()).not.toEqual([]);
  });
});

