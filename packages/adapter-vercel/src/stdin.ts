import { StdinClosed, TransportError } from '@sandstream/types';
import type { Answer, VercelApi } from './api.js';

/** The largest write sent in one request, before base64. */
export const STDIN_CHUNK_BYTES = 512 * 1024;

/** Answers resent with the same body: the offset makes a resend harmless. */
const RESEND_STATUSES = new Set([429, 502, 503]);
const MAX_RESENDS = 5;
/** The longest a `Retry-After` is honoured before one resend. */
const MAX_RETRY_AFTER_MS = 30_000;

/** Waits `ms`, or less when `signal` fires. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}

function offsetOf(answer: Answer): number | undefined {
  const json = answer.json as { offset?: unknown } | undefined;
  return typeof json?.offset === 'number' && Number.isInteger(json.offset) && json.offset >= 0 ? json.offset : undefined;
}

function codeOf(answer: Answer): string | undefined {
  const json = answer.json as { error?: { code?: unknown } } | undefined;
  return typeof json?.error?.code === 'string' ? json.error.code : undefined;
}

/**
 * Standard input of one command over the service's stdin endpoint, as seed
 * 002 describes the protocol: base64 writes of at most 512 KiB, one at a
 * time in call order (the runtime serialises calls), each carrying the
 * offset the service confirmed so far. Network errors, 429, 502 and 503 are
 * resent with the same body, after the answer's `Retry-After` when it has
 * one; the service skips bytes it already has. A
 * first empty request reads the confirmed offset; an answer without one
 * means the service offers no stdin, and the write fails before anything
 * is sent.
 */
export class StdinWriter {
  private confirmed: number | undefined;
  private closed = false;

  /**
   * @param fresh the adapter started this command and nothing else writes to
   *   it, so before the first write its confirmed offset is known to be 0.
   */
  constructor(
    private readonly api: VercelApi,
    private readonly cmdId: string,
    private readonly signal: AbortSignal,
    private readonly fresh = false,
  ) {}

  /** Bytes the service confirmed. */
  get offset(): number {
    return this.confirmed ?? 0;
  }

  private async send(body: { offset: number; data: string; close?: boolean }): Promise<Answer> {
    let lastError: unknown;
    /** What the service asked for with `Retry-After`, before the next resend. */
    let asked = 0;
    for (let attempt = 0; attempt <= MAX_RESENDS; attempt++) {
      if (attempt > 0) await pause(Math.max(Math.min(500, 20 * 2 ** attempt), Math.min(asked, MAX_RETRY_AFTER_MS)), this.signal);
      if (this.signal.aborted) throw new TransportError('the command was released while writing to its standard input');
      let answer: Answer;
      try {
        answer = await this.api.once(`/cmd/${this.cmdId}/stdin`, body, this.signal);
      } catch (error) {
        lastError = error;
        asked = 0;
        continue;
      }
      if (RESEND_STATUSES.has(answer.status)) {
        // A rate limiter (429) or an unavailable service may say when to come
        // back: resending sooner only meets the same refusal.
        lastError = new Error(`HTTP ${answer.status}`);
        asked = answer.retryAfterMs ?? 0;
        continue;
      }
      return answer;
    }
    throw new TransportError(
      `standard input: no answer after ${MAX_RESENDS + 1} attempts; whether the bytes arrived is unknown`,
      { cause: lastError },
    );
  }

  private async probe(): Promise<number> {
    if (this.confirmed !== undefined) return this.confirmed;
    const answer = await this.send({ offset: 0, data: '' });
    const offset = offsetOf(answer);
    if (answer.status === 200 && offset !== undefined) {
      this.confirmed = offset;
      return offset;
    }
    if (answer.status === 409 && codeOf(answer) === 'stdin_unavailable') {
      throw new StdinClosed('the command is not reading its standard input');
    }
    if (answer.status === 410) throw new StdinClosed('the sandbox is stopped');
    throw new StdinClosed(`the service offers no standard input for this command (HTTP ${answer.status}, no offset)`);
  }

  async write(data: Uint8Array): Promise<void> {
    if (this.closed) throw new StdinClosed('standard input was closed');
    await this.probe();
    let position = 0;
    while (position < data.byteLength) {
      const chunk = data.subarray(position, Math.min(data.byteLength, position + STDIN_CHUNK_BYTES));
      const start = this.confirmed!;
      const answer = await this.send({ offset: start, data: Buffer.from(chunk).toString('base64') });
      const offset = offsetOf(answer);
      if (answer.status === 200 && offset !== undefined) {
        if (offset < start || offset > start + chunk.byteLength) {
          throw new TransportError(`standard input: the service confirmed offset ${offset} after a write at ${start}`);
        }
        this.confirmed = offset;
        position += offset - start;
        continue;
      }
      if (answer.status === 504 && offset !== undefined && offset > start && offset <= start + chunk.byteLength) {
        // Stalled but progressing: the command reads slowly; send the rest.
        this.confirmed = offset;
        position += offset - start;
        continue;
      }
      if (answer.status === 409 && codeOf(answer) === 'stdin_unavailable') {
        throw new StdinClosed('the command stopped reading its standard input');
      }
      if (answer.status === 410) throw new StdinClosed('the sandbox is stopped');
      throw new TransportError(
        `standard input: HTTP ${answer.status} (${codeOf(answer) ?? answer.text.slice(0, 200)}); whether the bytes arrived is unknown`,
      );
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    let offset: number;
    if (this.confirmed === undefined && this.fresh) {
      // Our own command, never written to: the confirmed offset is 0, no probe needed.
      offset = 0;
    } else {
      try {
        offset = await this.probe();
      } catch (error) {
        if (error instanceof StdinClosed) return;
        throw error;
      }
    }
    const answer = await this.send({ offset, data: '', close: true });
    // Closed, already closed or gone, or (a fresh close) a service without the endpoint.
    if (answer.status === 200 || answer.status === 409 || answer.status === 410 || answer.status === 404) return;
    throw new TransportError(`closing standard input: HTTP ${answer.status}`);
  }
}
