/**
 * How the Vercel emulator handles one request: recording and latency, then
 * the faults in the order a network, a proxy and the service meet it
 * (held, refused, cut, unauthorised, served and its answer replaced, cut or
 * sent late), then the route.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { answerStatus, headerRecord, sleep, type FaultOf } from '@sandstream/remote/emulator';
import { routeOf, serveRoute } from './routes.js';
import { captureSink, nullSink, responseSink, type Captured } from './sinks.js';
import { HttpError, statusOfCode, type Out, type VercelState } from './state.js';
import type { VercelRoute } from './types.js';

const NDJSON = 'application/x-ndjson';
/** The bearer token the emulator accepts. */
export const TOKEN = 'emulator-token';

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new HttpError(400, 'bad_request', 'the body is not JSON');
  }
}

/** Sends what a route produced into a buffer, in part: half of it, or its whole NDJSON records but the last (`boundary`). */
function sendCut(res: ServerResponse, captured: Captured, boundary: boolean): void {
  const whole = Buffer.concat(captured.chunks);
  if (boundary) {
    const end = whole.lastIndexOf(10, whole.byteLength - 2) + 1;
    res.writeHead(captured.status, { 'content-type': captured.contentType, 'content-length': String(end) });
    res.end(whole.subarray(0, end));
    return;
  }
  res.writeHead(captured.status, { 'content-type': captured.contentType, 'content-length': String(whole.byteLength) });
  res.write(whole.subarray(0, Math.floor(whole.byteLength / 2)), () => res.socket?.destroy());
}

/** Handles one request of the API, faults included. */
export async function handle(state: VercelState, base: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', base);
  const method = req.method ?? 'GET';
  const route = routeOf(method, url.pathname);
  const record = state.recorder.record({ method, path: url.pathname, route, query: Object.fromEntries(url.searchParams), headers: headerRecord(req) });
  const send = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
    state.recorder.answered(record, status);
    if (res.headersSent || res.destroyed) return;
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const cut = (): void => {
    state.recorder.answered(record, -1);
    res.socket?.destroy();
  };
  const statusAnswer = (fault: FaultOf<'http-status', VercelRoute>): void => {
    state.recorder.answered(record, fault.status);
    if (res.headersSent || res.destroyed) return;
    answerStatus({ writeHead: (s, h) => void res.writeHead(s, h), write: (c) => void res.write(c), end: (c) => void res.end(c) }, fault, (status) =>
      JSON.stringify({ error: { code: 'injected_fault', message: `injected ${status}` } }),
    );
  };
  const route_ = (out: Omit<Out, 'record'>): Promise<void> => serveRoute(state, route, url, record.body, req, { ...out, record });
  try {
    await state.recorder.admit();
    state.recorder.setBody(record, await readBody(req));
    const faults = state.faults;
    const delay = faults.take(record, ['delay']);
    if (delay !== undefined) await sleep(delay.ms);
    const refused = faults.take(record, ['http-status'], (f) => f.served !== true);
    if (refused !== undefined) return statusAnswer(refused);
    if (faults.take(record, ['reset'], (f) => f.served !== true && f.at === undefined) !== undefined) return cut();
    const error = faults.take(record, ['error'], (f) => f.at === undefined);
    if (error !== undefined) throw new HttpError(statusOfCode(error.code), error.code, error.message ?? `${error.code} (injected)`);
    if (req.headers.authorization !== `Bearer ${TOKEN}`) throw new HttpError(401, 'unauthorized', 'missing or wrong bearer token');
    const hidden = faults.take(record, ['http-status'], (f) => f.served === true);
    if (hidden !== undefined) {
      // Served, then the fault's answer: the effect happened, the client cannot know.
      await route_({ json: () => undefined, stream: () => nullSink() });
      return statusAnswer(hidden);
    }
    const lost = faults.take(record, ['reset'], (f) => f.served === true && f.at === undefined);
    const truncate = faults.take(record, ['truncate'], (f) => f.at === undefined);
    if (lost !== undefined || truncate !== undefined) {
      // Served to the end of its answer, which is then lost (reset) or cut (truncate).
      const captured: Captured = { status: 0, contentType: 'application/json', chunks: [] };
      await route_({
        json: (status, payload) => {
          captured.status = status;
          captured.chunks.push(Buffer.from(JSON.stringify(payload)));
        },
        stream: () => {
          captured.status = 200;
          captured.contentType = NDJSON;
          return captureSink(captured);
        },
      });
      state.recorder.answered(record, -1);
      if (lost !== undefined || res.destroyed) return void res.socket?.destroy();
      return sendCut(res, captured, truncate!.boundary === true);
    }
    const slow = faults.take(record, ['slow-headers']);
    const held = slow === undefined ? undefined : sleep(slow.ms);
    await route_({
      json: (status, payload) => void (held === undefined ? send(status, payload) : held.then(() => send(status, payload))),
      stream: () => {
        state.recorder.answered(record, 200, false);
        return responseSink(res, NDJSON, held);
      },
    });
    // A stream's end (a JSON answer stamps its own, however late a fault sends it).
    if (record.status !== 0) state.recorder.ended(record);
  } catch (error) {
    if (error instanceof HttpError) send(error.status, { error: { code: error.code, message: error.message }, ...error.extra });
    else send(500, { error: { code: 'internal', message: String(error) } });
  }
}
