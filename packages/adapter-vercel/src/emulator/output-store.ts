/**
 * Where the Vercel emulator keeps every command's log records for replays,
 * as the service keeps a command's logs while its sandbox lives.
 */
import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** One log record: where its NDJSON line (serialised once for every replay) is in the {@link OutputStore}. */
export interface LogRecord {
  readonly stream: 'stdout' | 'stderr';
  readonly offset: number;
  readonly length: number;
}

/**
 * Where every command's output is kept for replays, as the service keeps a
 * command's logs while its sandbox lives: an append-only file, unlinked once
 * opened (it goes with the process), not the emulator's memory. Kept in
 * memory, the output of a long run (hundreds of MB) made every later spawn
 * slower, since fork() copies the page tables of the whole process and
 * blocks the event loop meanwhile (about 0.1 ms per MB resident here): each
 * command and each tree helper then waited longer to start.
 */
export class OutputStore {
  private readonly fd: number;
  private size = 0;
  private closed = false;

  constructor() {
    const dir = mkdtempSync(join(tmpdir(), 'vercel-emulator-output-'));
    try {
      this.fd = openSync(join(dir, 'output'), 'w+', 0o600);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  append(stream: 'stdout' | 'stderr', line: Buffer): LogRecord {
    const offset = this.size;
    if (!this.closed) {
      for (let done = 0; done < line.byteLength; ) done += writeSync(this.fd, line, done, line.byteLength - done, offset + done);
      this.size += line.byteLength;
    }
    return { stream, offset, length: this.closed ? 0 : line.byteLength };
  }

  line(record: LogRecord): Buffer {
    const buffer = Buffer.allocUnsafe(record.length);
    if (this.closed) return buffer.subarray(0, 0);
    for (let done = 0; done < record.length; ) {
      const read = readSync(this.fd, buffer, done, record.length - done, record.offset + done);
      if (read === 0) return buffer.subarray(0, done);
      done += read;
    }
    return buffer;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
  }
}

/** The longest NDJSON line the emulator sends for one record, in characters. */
const MAX_LINE = 64 * 1024;

/**
 * Appends `text` as one record, or as several when its JSON line would be
 * long (control characters escape to six characters each), never splitting
 * a surrogate pair.
 */
export function pushRecords(store: OutputStore, records: LogRecord[], stream: 'stdout' | 'stderr', text: string): void {
  const record = (data: string): LogRecord => store.append(stream, Buffer.from(`${JSON.stringify({ stream, data })}\n`));
  // The line's length without building it: control characters escape to
  // six characters, a quote or backslash to two (U+2028/9 are not escaped).
  let length = text.length + 32;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20) length += 5;
    else if (code === 0x22 || code === 0x5c) length += 1;
  }
  if (length <= MAX_LINE) {
    records.push(record(text));
    return;
  }
  const size = Math.max(1, Math.ceil(text.length / Math.ceil(length / MAX_LINE)));
  for (let start = 0; start < text.length; ) {
    let end = Math.min(text.length, start + size);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end++;
    records.push(record(text.slice(start, end)));
    start = end;
  }
}
