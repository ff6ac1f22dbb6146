/**
 * Standard input of one command over the service's stdin endpoint
 * (`POST .../cmd/{id}/stdin` with `{ offset, data, close? }`, answered with
 * the confirmed offset), as seed 002 describes the protocol. The public
 * Vercel API has no such endpoint; the adapter uses it only where the
 * service answers its probe (ADR-0046).
 */
import { StdinClosed, TransportError } from '@sandstream/types';
import { retry, type RetryPolicy } from '@sandstream/remote';
import type { Answer, VercelApi } from './api.js';

/** The largest write sent in one request, before base64. */
export const STDIN_CHUNK_BYTES = 512 * 1024;

/** Answers resent with the same body: the offset makes a resend harmless. */
const RESEND_STATUSES = new Set([429, 502, 503]);

/** An answer worth resending, carrying its `Retry-After`. */
class Resend extends Error {
  constructor(readonly answer: Answer) {
    super(`HTTP ${answer.status}`);
  }
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
 * Writes of at most 512 KiB, one at a time in call order (the runtime
 * serialises calls), each carrying the offset the service confirmed so
 * far; network errors, 429, 502 and 503 are resent with the same body under
 * the one retry policy, after the answer's `Retry-After` when it has one
 * (the service skips bytes it already has). A first empty request reads the
 * confirmed offset; an answer without one means the service offers no
 * stdin, and the write fails before anything is sent.
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
    private readonly policy: RetryPolicy,
    private readonly fresh = false,
  ) {}

  /** Bytes the service confirmed. */
  get offset(): number {
    return this.confirmed ?? 0;
  }

  private async send(body: { offset: number; data: string; close?: boolean }): Promise<Answer> {
    try {
      return await retry(
        this.policy,
        async () => {
          // Released: the command's end is reported (or it is being killed); its input is closed.
          if (this.signal.aborted) throw new StdinClosed('the command ended while its standard input was being written');
          const answer = await this.api.once(`/cmd/${this.cmdId}/stdin`, body, this.signal);
          if (RESEND_STATUSES.has(answer.status)) throw new Resend(answer);
          return answer;
        },
        {
          retryable: (error) => !(error instanceof TransportError || error instanceof StdinClosed),
          retryAfterMs: (error) => (error instanceof Resend ? error.answer.retryAfterMs : undefined),
        },
      );
    } catch (error) {
      if (error instanceof TransportError || error instanceof StdinClosed) throw error;
      if (this.signal.aborted) throw new StdinClosed('the command ended while its standard input was being written', { cause: error });
      throw new TransportError('standard input: no answer; whether the bytes arrived is unknown', { cause: error });
    }
  }

  private async probe(): Promise<number> {
    if (this.confirmed !== undefined) return this.confirmed;
    const answer = await this.send({ offset: 0, data: '' });
    const offset = offsetOf(answer);
    if (answer.status === 200 && offset !== undefined) return (this.confirmed = offset);
    throw this.refusal(answer, 'is not reading its standard input');
  }

  /** The `StdinClosed` of an answer that says no stdin is there to write to. */
  private refusal(answer: Answer, what: string): StdinClosed {
    if (answer.status === 409 && codeOf(answer) === 'stdin_unavailable') return new StdinClosed(`the command ${what}`);
    if (answer.status === 410) return new StdinClosed('the sandbox is stopped');
    return new StdinClosed(`the service offers no standard input for this command (HTTP ${answer.status}, no offset)`);
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
      const progressed = offset !== undefined && offset > start && offset <= start + chunk.byteLength;
      if ((answer.status === 200 && offset !== undefined) || (answer.status === 504 && progressed)) {
        // A 504 with progress: the command reads slowly; the rest is sent next.
        if (offset! < start || offset! > start + chunk.byteLength) {
          throw new TransportError(`standard input: the service confirmed offset ${offset} after a write at ${start}`);
        }
        this.confirmed = offset;
        position += offset! - start;
        continue;
      }
      if ((answer.status === 409 && codeOf(answer) === 'stdin_unavailable') || answer.status === 410) throw this.refusal(answer, 'stopped reading its standard input');
      throw new TransportError(`standard input: HTTP ${answer.status} (${codeOf(answer) ?? answer.text.slice(0, 200)}); whether the bytes arrived is unknown`);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await this.#close();
    } catch (error) {
      // Not closed: the driver may repeat the close (it is idempotent on the service's side too).
      this.closed = false;
      throw error;
    }
  }

  async #close(): Promise<void> {
    let offset = 0;
    // Our own command, never written to: its confirmed offset is 0, no probe needed.
    if (this.confirmed !== undefined || !this.fresh) {
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
