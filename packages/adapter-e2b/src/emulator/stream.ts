/**
 * A command's events streamed to one client (a Start's or a Connect's
 * answer), with keepalives and the wire faults that strike inside a stream.
 */
import { Code, ConnectError, type HandlerContext } from '@connectrpc/connect';
import { firstHalf, hijack, hold, reached, type StreamPoint } from '@sandstream/remote/emulator';
import type { ProcessEvent } from '../gen/envd-process_pb.js';
import type { Command, Subscription } from './command.js';
import type { Call, Envd } from './context.js';
import { envelope, faultError } from './wire.js';

const KEEPALIVE: ProcessEvent = { $typeName: 'process.ProcessEvent', event: { case: 'keepalive', value: { $typeName: 'process.ProcessEvent.KeepAlive' } } };

/** envd's keepalive interval when the client names none (`defaultKeepAliveInterval`, internal/permissions/keepalive.go). */
export const DEFAULT_KEEPALIVE_MS = 90_000;

/**
 * The keepalive interval as envd reads `Keepalive-Ping-Interval`: whole
 * seconds (Go's `strconv.Atoi`), anything else the default. A zero or
 * negative one makes envd's `time.NewTicker` panic in the stream's
 * goroutine; here the stream fails instead, so a client that sends one
 * fails offline too.
 */
function keepaliveMs(envd: Envd, call: Call): number {
  if (envd.options.keepaliveMs !== undefined) return envd.options.keepaliveMs;
  const header = String(call.req.headers['keepalive-ping-interval'] ?? '');
  if (!/^[+-]?\d+$/.test(header)) return DEFAULT_KEEPALIVE_MS;
  const seconds = Number(header);
  if (seconds <= 0) throw new ConnectError(`Keepalive-Ping-Interval ${header}: envd's ticker takes a positive interval only`, Code.Internal);
  return seconds * 1000;
}

/** Sends half of `event`'s frame (none with `boundary`), ends the response and closes the connection. */
function truncateAt(call: Call, event: ProcessEvent, boundary: boolean, close: 'reset' | 'end'): void {
  const headersSent = call.res.headersSent;
  const writers = hijack(call.res);
  if (!headersSent) {
    writers.writeHead(200, { 'content-type': String(call.req.headers['content-type'] ?? 'application/connect+proto'), connection: 'close' });
  }
  if (!boundary) writers.write(firstHalf(envelope(call, event)));
  writers.end(undefined, () => (close === 'reset' ? call.req.socket.destroy() : call.req.socket.end()));
}

/** Streams a command's events to one client, with keepalives and faults. */
export async function* follow(envd: Envd, command: Command, subscription: Subscription, call: Call, ctx: HandlerContext): AsyncGenerator<{ event: ProcessEvent }> {
  const { recorded } = call;
  const reset = envd.faults.take(recorded, ['reset'], (fault) => fault.at !== undefined || fault.served === true);
  const error = envd.faults.take(recorded, ['error'], (fault) => fault.at !== undefined);
  const truncate = envd.faults.take(recorded, ['truncate']);
  const stall = envd.faults.take(recorded, ['stall']);
  const byBytes = [reset?.at, error?.at, truncate?.at, stall?.at].some((at) => typeof at === 'object');
  const interval = keepaliveMs(envd, call);
  let sent = 0;
  let sentBytes = 0;
  /** True when `point` is due before `next` goes out. */
  const due = (point: StreamPoint | undefined, next: ProcessEvent): boolean =>
    point !== undefined && reached(point, sent, sentBytes, next.event.case === 'end', byBytes ? envelope(call, next).byteLength : 0);
  /** The faults due before `next` goes out; true when the stream is over (or held open for good). */
  const strike = async (next: ProcessEvent): Promise<boolean> => {
    if (reset !== undefined && due(reset.at ?? 0, next)) {
      call.req.socket.destroy();
      return true;
    }
    if (error !== undefined && due(error.at, next)) throw faultError(error);
    if (truncate !== undefined && due(truncate.at ?? 0, next)) {
      truncateAt(call, next, truncate.boundary === true, truncate.close ?? 'reset');
      return true;
    }
    if (stall !== undefined && due(stall.at, next)) {
      await hold(ctx.signal);
      return true;
    }
    return false;
  };
  try {
    const startEvent: ProcessEvent = {
      $typeName: 'process.ProcessEvent',
      event: { case: 'start', value: { $typeName: 'process.ProcessEvent.StartEvent', pid: command.pid } },
    };
    for (let next: ProcessEvent | undefined = startEvent; next !== undefined; ) {
      if (await strike(next)) return;
      yield { event: next };
      if (next.event.case === 'end') return;
      sent++;
      if (byBytes) sentBytes += envelope(call, next).byteLength;
      const item = await subscription.next(interval, ctx.signal);
      if (item === 'aborted' || item === undefined) return;
      next = item === 'timeout' ? KEEPALIVE : item;
    }
  } finally {
    // A client that goes away stops only its own subscription, never the command.
    command.unsubscribe(subscription);
  }
}
