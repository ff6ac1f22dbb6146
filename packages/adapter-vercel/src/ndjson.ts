/**
 * The NDJSON bodies of the Vercel Sandbox API (a log stream; an attached
 * start's answer), split into records here rather than by the SDK: its
 * splitter re-scans everything buffered on each network chunk, which is
 * quadratic in the length of a line, and the service's records of escaped
 * binary-looking text are long.
 */

/** A log record as the API sends it. */
export interface LogLine {
  readonly stream: 'stdout' | 'stderr';
  readonly data: string;
}

/** One record of a body: a log line, or a command (an attached start's first and last records). */
export type ApiRecord =
  | { readonly kind: 'log'; readonly line: LogLine }
  | { readonly kind: 'command'; readonly id: string; readonly exitCode: number | null };

const utf8 = new TextDecoder();

function parse(bytes: Uint8Array, sessionId: string): ApiRecord | undefined {
  if (bytes.byteLength === 0) return undefined;
  const record = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')) as {
    stream?: unknown;
    data?: unknown;
    command?: { id?: unknown; exitCode?: unknown };
  };
  if (record.command !== undefined) {
    const { id, exitCode } = record.command;
    if (typeof id !== 'string' || id === '' || (exitCode !== null && exitCode !== undefined && typeof exitCode !== 'number')) {
      throw new Error(`the answer carried an invalid command record: ${utf8.decode(bytes).slice(0, 200)}`);
    }
    return { kind: 'command', id, exitCode: typeof exitCode === 'number' ? exitCode : null };
  }
  if (record.stream === 'error') {
    const data = (record.data ?? {}) as { code?: unknown; message?: unknown };
    throw Object.assign(new Error(String(data.message ?? 'the service ended the stream with an error')), {
      name: 'StreamError',
      code: String(data.code ?? 'unknown'),
      sessionId,
    });
  }
  if ((record.stream !== 'stdout' && record.stream !== 'stderr') || typeof record.data !== 'string') {
    throw new Error(`the stream carried an invalid record: ${utf8.decode(bytes).slice(0, 200)}`);
  }
  return { kind: 'log', line: { stream: record.stream, data: record.data } };
}

/**
 * The records of an NDJSON body, in linear time. A last line without its
 * newline is parsed as it is: whole, or a truncated body (a parse error).
 * An error record throws a `StreamError`. `waitIfPaused` is awaited before
 * each network read, so a paused consumer holds the HTTP stream.
 */
export async function* ndjsonRecords(
  body: ReadableStream<Uint8Array>,
  sessionId: string,
  waitIfPaused: () => Promise<void> | undefined = () => undefined,
): AsyncGenerator<ApiRecord> {
  const reader = body.getReader();
  let pending: Uint8Array[] = [];
  try {
    for (;;) {
      await waitIfPaused();
      const { value: read, done } = await reader.read();
      if (done) break;
      // A Buffer view: its indexOf is a memchr, a typed array's a loop.
      const value = Buffer.from(read.buffer, read.byteOffset, read.byteLength);
      let start = 0;
      for (let end = value.indexOf(10); end !== -1; end = value.indexOf(10, start)) {
        const piece = value.subarray(start, end);
        start = end + 1;
        const line = pending.length === 0 ? piece : Buffer.concat([...pending, piece]);
        pending = [];
        const record = parse(line, sessionId);
        if (record !== undefined) yield record;
      }
      if (start < value.byteLength) pending.push(value.subarray(start));
    }
    const last = parse(pending.length === 0 ? new Uint8Array(0) : Buffer.concat(pending), sessionId);
    if (last !== undefined) yield last;
  } finally {
    reader.cancel().catch(() => undefined);
  }
}
