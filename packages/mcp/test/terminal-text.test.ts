import { describe, expect, it } from 'vitest';
import { KEYS, TerminalText } from '../src/index.js';

describe('TerminalText: a terminal output as text', () => {
  it('CR LF is LF, and CSI, OSC and private-mode sequences are removed', () => {
    expect(TerminalText.of('a\r\nb\r\n')).toBe('a\nb\n');
    expect(TerminalText.of('\x1b[?2004h\x1b[1;31mred\x1b[0m \x1b]0;title\x07ok\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\r\n')).toBe('red oklink\n');
    expect(TerminalText.of('\x1b(Bx\x1b=y\x07\x00z')).toBe('xyz');
  });

  it('a bare CR overwrites the line, backspace moves back, erase in line clears', () => {
    expect(TerminalText.of('10%\r20%\r100%\n')).toBe('100%\n');
    expect(TerminalText.of('long status\r\x1b[Kdone\n')).toBe('done\n');
    expect(TerminalText.of('abc\b \b\bX\n')).toBe('aX \n');
    expect(TerminalText.of('abcdef\x1b[3D\x1b[2Px\n')).toBe('abcx\n');
  });

  it('in pieces: a sequence split across writes, and the current line given once, a redrawn one again', () => {
    const text = new TerminalText();
    text.write('>>> \x1b[');
    expect(text.take()).toBe('>>> ');
    text.write('1mprint(1)\r\n1\r\n>>> ');
    expect(text.take()).toBe('print(1)\n1\n>>> ');
    text.write('\r\x1b[K\r>>> x');
    expect(text.take()).toBe('x');
    text.write('\r\x1b[Kother\n');
    expect(text.take()).toBe('\nother\n');
  });

  it('names keys as a terminal types them', () => {
    expect([KEYS['enter'], KEYS['ctrl-c'], KEYS['ctrl-d'], KEYS['up'], KEYS['backspace']]).toEqual(['\r', '\x03', '\x04', '\x1b[A', '\x7f']);
  });
});
