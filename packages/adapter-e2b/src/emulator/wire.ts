/**
 * Where requests enter the envd emulator and where wire faults strike them:
 * recording, latency, a proxy's refusal, authentication, and the faults that
 * hit a unary answer once the request took effect.
 */
import { create, toBinary, toJsonString } from '@bufbuild/protobuf';
import { Code, ConnectError, createContextKey, type HandlerContext } from '@connectrpc/connect';
import { answerStatus, FaultError, headerRecord, hijack, hold, sleep, type FaultOf } from '@sandstream/remote/emulator';
import { StartResponseSchema, type ProcessEvent } from '../gen/envd-process_pb.js';
import { basicUser, findAccount } from './accounts.js';
import { sandboxOf, type Call, type Envd, type RawRequest } from './context.js';
import type { EnvdFault, EnvdMethod, EnvdRoute } from './types.js';

/** The node request and response of a Connect call, handed to its handler. */
export const rawKey = createContextKey<RawRequest | undefined>(undefined, { description: 'node request' });

/** Server-stream RPCs: their wire faults strike in the stream (see `stream.ts`). */
export const STREAMS: ReadonlySet<EnvdRoute> = new Set<EnvdRoute>(['Start', 'Connect']);

/** Connect's code for a code name (`'unavailable'`, `'invalid_argument'`, ...). */
export function connectCode(name: string): Code | undefined {
  for (const [key, value] of Object.entries(Code)) {
    if (typeof value === 'number' && key.replace(/[A-Z]/g, (c, at: number) => (at === 0 ? '' : '_') + c.toLowerCase()) === name) return value;
  }
  return undefined;
}

/** Checks the parts of a fault only envd can judge (its code names). */
export function checkEnvdFault(fault: EnvdFault): void {
  if (fault.kind === 'error' && connectCode(fault.code) === undefined) {
    throw new FaultError(`fault code '${fault.code}' is not a Connect code name (e.g. 'unavailable', 'internal', 'invalid_argument')`);
  }
}

/** The Connect error an `error` fault raises. */
export function faultError(fault: FaultOf<'error', EnvdRoute>): ConnectError {
  return new ConnectError(fault.message ?? `${fault.code} (injected)`, connectCode(fault.code) ?? Code.Internal);
}

/** A proxy's status in place of the answer, with a Connect error body or a bare one, and the connection closed. */
export function answerHttpStatus(call: Call, fault: FaultOf<'http-status', EnvdRoute>): void {
  answerStatus(hijack(call.res), fault, (status) =>
    JSON.stringify({ code: status === 429 || status >= 502 ? 'unavailable' : 'unknown', message: `injected HTTP ${status}` }),
  );
}

/**
 * Records an RPC, waits out the latency, and lets the faults and checks
 * that come before envd acts strike it. Resolves with the call, or throws
 * the error the client gets.
 */
export async function enter(envd: Envd, method: EnvdMethod, message: unknown, ctx: HandlerContext): Promise<Call> {
  const raw = ctx.values.get(rawKey)!;
  const recorded = envd.recorder.record({ method: raw.req.method ?? 'POST', path: `/process.Process/${method}`, route: method, headers: headerRecord(raw.req), body: message });
  const call: Call = { ...raw, recorded };
  // The answer's status and end, once it is over: -1 when the connection was cut before it was.
  raw.res.once('close', () => envd.recorder.answered(recorded, raw.res.writableFinished ? raw.res.statusCode : -1));
  await envd.recorder.admit(ctx.signal);
  // A proxy in front of envd fails before envd sees anything.
  const refused = envd.faults.take(recorded, ['http-status'], (fault) => fault.served !== true);
  if (refused !== undefined) {
    answerHttpStatus(call, refused);
    await hold(ctx.signal);
    throw new ConnectError('answered by an injected HTTP status', Code.Aborted);
  }
  if (envd.faults.take(recorded, ['reset'], (fault) => fault.served !== true && fault.at === undefined) !== undefined) {
    raw.req.socket.destroy();
    await hold(ctx.signal);
    throw new ConnectError('connection reset (injected)', Code.Aborted);
  }
  if (envd.options.accessToken !== undefined && raw.req.headers['x-access-token'] !== envd.options.accessToken) {
    throw new ConnectError('invalid access token', Code.Unauthenticated);
  }
  const username = basicUser(raw.req);
  if (username !== undefined && findAccount(username) === undefined) {
    throw new ConnectError(`invalid username: '${username}'`, Code.Unauthenticated);
  }
  const target = sandboxOf(envd, raw.req);
  if (target !== undefined) {
    // The proxy in front of a dead sandbox answers 502, which Connect reads as Unavailable.
    if (target.killedAt !== undefined) throw new ConnectError(`sandbox ${target.sandboxId} is not running`, Code.Unavailable);
    if (raw.req.headers['x-access-token'] !== target.accessToken) throw new ConnectError('invalid access token', Code.Unauthenticated);
  }
  const delay = envd.faults.take(recorded, ['delay']);
  if (delay !== undefined) await sleep(delay.ms, ctx.signal);
  const error = envd.faults.take(recorded, ['error'], (fault) => fault.at === undefined);
  if (error !== undefined) throw faultError(error);
  return call;
}

/**
 * After a unary request took effect: the wire faults that hit its answer.
 * Returns once the answer may be sent (slow headers), or never sends it.
 */
export async function unaryAnswer(envd: Envd, call: Call, ctx: HandlerContext): Promise<void> {
  const { recorded } = call;
  const status = envd.faults.take(recorded, ['http-status'], (fault) => fault.served === true);
  if (status !== undefined) {
    answerHttpStatus(call, status);
    return hold(ctx.signal);
  }
  if (envd.faults.take(recorded, ['reset'], (fault) => fault.served === true) !== undefined) {
    call.req.socket.destroy();
    return hold(ctx.signal);
  }
  if (envd.faults.take(recorded, ['truncate']) !== undefined) {
    // A binary Connect unary answer is the bare message; these are empty
    // or short, so the promise of a longer body is what gets cut.
    const writers = hijack(call.res);
    const contentType = String(call.req.headers['content-type'] ?? 'application/proto');
    writers.writeHead(200, { 'content-type': contentType, 'content-length': '16', connection: 'close' });
    writers.write(new Uint8Array(8), () => call.req.socket.end());
    return hold(ctx.signal);
  }
  const slow = envd.faults.take(recorded, ['slow-headers']);
  if (slow !== undefined) await sleep(slow.ms, ctx.signal);
}

/** `event` as the Connect envelope the client would read, in the request's encoding. */
export function envelope(call: Call, event: ProcessEvent): Uint8Array {
  const message = create(StartResponseSchema, { event });
  const json = String(call.req.headers['content-type'] ?? '').includes('json');
  const payload = json ? new TextEncoder().encode(toJsonString(StartResponseSchema, message)) : toBinary(StartResponseSchema, message);
  const frame = new Uint8Array(5 + payload.byteLength);
  new DataView(frame.buffer).setUint32(1, payload.byteLength);
  frame.set(payload, 5);
  return frame;
}
