/**
 * Where a route's answer goes: the HTTP response, nowhere (a fault replaced
 * it), or a buffer (a fault sends part of it, or sends it late).
 */
import type { ServerResponse } from 'node:http';
import type { LogSink } from './state.js';

/** An answer produced for a request whose answer a fault takes. */
export interface Captured {
  status: number;
  contentType: string;
  readonly chunks: Buffer[];
}

/** A sink for a request whose answer is replaced by a fault: the effect happens, nothing is sent. */
export function nullSink(): LogSink {
  return { write: () => true, end: () => undefined, once: () => undefined, destroy: () => undefined, destroyed: true };
}

/** A sink that keeps what is written, for a fault that sends it in part (or not at all) once it is complete. */
export function captureSink(captured: Captured): LogSink {
  return {
    write: (chunk) => {
      captured.chunks.push(Buffer.from(chunk));
      return true;
    },
    end: (chunk) => {
      if (chunk !== undefined) captured.chunks.push(Buffer.from(chunk));
    },
    once: () => undefined,
    destroy: () => undefined,
    destroyed: false,
  };
}

/**
 * The response as a sink. With `heldUntil`, nothing goes out (headers
 * included) before that promise settles: what is written meanwhile waits,
 * in order (slow response headers).
 */
export function responseSink(res: ServerResponse, contentType: string, heldUntil?: Promise<void>): LogSink {
  let open = heldUntil === undefined;
  const queued: Array<() => void> = [];
  const run = (step: () => void): void => (open ? step() : void queued.push(step));
  if (open) res.writeHead(200, { 'content-type': contentType });
  else {
    void heldUntil!.then(() => {
      if (!res.destroyed) res.writeHead(200, { 'content-type': contentType });
      open = true;
      for (const step of queued.splice(0)) step();
    });
  }
  return {
    write: (chunk) => {
      if (open) return res.write(chunk);
      queued.push(() => void res.write(chunk));
      return true;
    },
    end: (chunk) => run(() => void (chunk === undefined ? res.end() : res.end(chunk))),
    once: (event, listener) => res.once(event, listener),
    // A broken connection, as a network fault looks to the client.
    destroy: () => res.socket?.destroy(),
    get destroyed() {
      return res.destroyed;
    },
  };
}
