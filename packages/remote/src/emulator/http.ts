/**
 * The HTTP plumbing every emulator needs: listening on a random local port,
 * tracking connections so a fault or `close()` can cut them, taking a
 * response away from a framework so a fault can write what no server would
 * (a proxy's status, half a frame), and recording headers.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** Listens on 127.0.0.1 with a random port; resolves with the port. */
export async function listenLocal(server: Server): Promise<number> {
  await new Promise<void>((resolveListen, rejectListen) => {
    server.once('error', rejectListen);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', rejectListen);
      resolveListen();
    });
  });
  return (server.address() as AddressInfo).port;
}

/** The open connections of a server, for faults and teardown that cut them all. */
export class Connections {
  private readonly sockets = new Set<Socket>();

  constructor(server: Server) {
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  /** How many are open. */
  get size(): number {
    return this.sockets.size;
  }

  /** Destroys every open connection (a network failure, as the client sees it). */
  destroyAll(): void {
    for (const socket of this.sockets) socket.destroy();
  }
}

/** Destroys every connection, then stops listening. */
export async function closeServer(server: Server, connections: Connections): Promise<void> {
  const closed = new Promise<void>((resolveClose) => server.close(() => resolveClose()));
  connections.destroyAll();
  await closed;
}

/** A request's headers, names in lower case, repeated ones joined by `, `. */
export function headerRecord(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

/** The real writers of a response taken away from its handler. */
export interface Writers {
  writeHead(status: number, headers: Record<string, string>): void;
  write(chunk: Uint8Array | string, done?: () => void): void;
  end(chunk?: Uint8Array | string, done?: () => void): void;
}

/**
 * Takes `res` away from whoever handles it (a Connect handler, say):
 * whatever that handler writes afterwards goes nowhere, and the returned
 * writers are the only way to the client.
 */
export function hijack(res: ServerResponse): Writers {
  const writeHead = res.writeHead.bind(res);
  const write = res.write.bind(res);
  const end = res.end.bind(res);
  const callbackOf = (args: unknown[]): (() => void) | undefined => args.find((a): a is () => void => typeof a === 'function');
  res.writeHead = (() => res) as unknown as ServerResponse['writeHead'];
  res.write = ((...args: unknown[]) => {
    const done = callbackOf(args);
    if (done !== undefined) queueMicrotask(done);
    return true;
  }) as ServerResponse['write'];
  res.end = ((...args: unknown[]) => {
    const done = callbackOf(args);
    if (done !== undefined) queueMicrotask(done);
    return res;
  }) as ServerResponse['end'];
  return {
    writeHead: (status, headers) => void writeHead(status, headers),
    write: (chunk, done) => void write(chunk, () => done?.()),
    end: (chunk, done) => void (chunk === undefined ? end(() => done?.()) : end(chunk, () => done?.())),
  };
}

/** The first half of `frame`: at least one byte short of it, and at least one byte of it when it has two. */
export function firstHalf(frame: Uint8Array): Uint8Array {
  return frame.subarray(0, Math.min(frame.byteLength - 1, Math.max(1, Math.floor(frame.byteLength / 2))));
}

/**
 * Writes an `http-status` fault's answer: `status` before any other header,
 * `Retry-After` when given, the body the emulator renders (its service's
 * error shape, or bare text), and `Connection: close`.
 */
export function answerStatus(
  writers: Writers,
  fault: { readonly status: number; readonly retryAfterSeconds?: number; readonly body?: 'service' | 'text' },
  serviceBody: (status: number) => string,
): void {
  const service = (fault.body ?? 'service') === 'service';
  const headers: Record<string, string> = {
    'content-type': service ? 'application/json' : 'text/plain; charset=utf-8',
    connection: 'close',
  };
  if (fault.retryAfterSeconds !== undefined) headers['retry-after'] = String(fault.retryAfterSeconds);
  writers.writeHead(fault.status, headers);
  writers.end(service ? serviceBody(fault.status) : `injected HTTP ${fault.status}\n`);
}
