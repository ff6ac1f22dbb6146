/**
 * SS-WAIT-3 through the real child driver: a loop reading a line-oriented
 * server's replies over stdin/stdout, with stderr flowing, while another
 * task awaits wait() the whole time, receives every reply and the end.
 * Every step waits for the reply itself; the bound only turns a hang into
 * a failure.
 */
import { describe, expect, it } from 'vitest';
import { lines } from '@sandstream/types';
import { COMMAND_BOUND_MS, nodeScript, testSandbox, within } from './helpers.js';

const SERVER = `
const rl = require('node:readline').createInterface({ input: process.stdin });
rl.on('line', (line) => {
  process.stderr.write('log: got ' + line + '\\n');
  process.stdout.write(JSON.stringify({ reply: line }) + '\\n');
  process.stderr.write('log: answered ' + line + '\\n');
});
rl.on('close', () => process.stderr.write('log: end of input\\n'));
`;

describe('a loop that is reading while another task awaits wait() [SS-WAIT-3]', () => {
  it('gets every reply of a write, reply, write, reply exchange with stderr flowing', async () => {
    const sb = testSandbox();
    await using proc = sb.stream(nodeScript(SERVER), { stdin: 'pipe' });
    const replies: string[] = [];
    const logs: string[] = [];
    let arrived: (() => void) | undefined;
    const reading = (async () => {
      for await (const line of lines(proc)) {
        (line.stream === 'stdout' ? replies : logs).push(line.text.trimEnd());
        arrived?.();
      }
    })();
    let settled = false;
    const waiting = proc.wait().finally(() => {
      settled = true;
    });
    const exchanges = 20;
    for (let i = 0; i < exchanges; i++) {
      const reply = new Promise<void>((resolve, reject) => {
        arrived = () => {
          if (replies.length > i) resolve();
        };
        reading.then(() => reject(new Error(`the loop ended before reply ${i}`)), reject);
      });
      await proc.stdin!.write(`request-${i}\n`);
      await within(COMMAND_BOUND_MS, reply, `reply ${i}`);
      expect(settled).toBe(false);
    }
    await proc.stdin!.end();
    await within(COMMAND_BOUND_MS, reading, 'the reading loop');
    const result = await within(COMMAND_BOUND_MS, waiting, 'wait()');
    expect(replies).toEqual(Array.from({ length: exchanges }, (_, i) => JSON.stringify({ reply: `request-${i}` })));
    expect(logs).toHaveLength(2 * exchanges + 1);
    expect(logs.at(-1)).toBe('log: end of input');
    expect(result).toMatchObject({ exitCode: 0, streamed: true });
  });
});
