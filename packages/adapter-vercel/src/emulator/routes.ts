/**
 * The API's endpoints, as `@vercel/sandbox` 3.5.0 calls them: which route a
 * request is, and what each answers.
 */
import type { IncomingMessage } from 'node:http';
import { constants } from 'node:os';
import { commandJson, signalLeader, startCommand, whenExited } from './commands.js';
import { streamLogs } from './logs.js';
import { createSession, sandboxJson, sessionJson, stopSession } from './sessions.js';
import { HttpError, isRecord, type Out, type VercelState } from './state.js';
import { stdin } from './stdin.js';
import type { VercelRoute } from './types.js';

const SESSION_PATH = /^\/v2\/sandboxes\/sessions\/([^/]+)(\/.*)?$/;
const COMMAND_PATH = /^\/cmd\/([^/]+)(\/[a-z]+)?$/;

/** The route a request is, or undefined for one the API does not serve. */
export function routeOf(method: string, path: string): VercelRoute | undefined {
  if (method === 'POST' && (path === '/v3/sandboxes' || path === '/v2/sandboxes')) return 'create-sandbox';
  const session = SESSION_PATH.exec(path);
  if (session === null) return method === 'GET' && /^\/v2\/sandboxes\/[^/]+$/.test(path) ? 'get-sandbox' : undefined;
  const rest = session[2] ?? '';
  if (rest === '') return method === 'GET' ? 'get-session' : undefined;
  if (rest === '/stop') return method === 'POST' ? 'stop-session' : undefined;
  if (rest === '/cmd') return method === 'POST' ? 'start-command' : undefined;
  const action = COMMAND_PATH.exec(rest)?.[2];
  if (action === undefined) return COMMAND_PATH.test(rest) && method === 'GET' ? 'get-command' : undefined;
  const actions: Record<string, [string, VercelRoute]> = { '/logs': ['GET', 'logs'], '/kill': ['POST', 'kill'], '/stdin': ['POST', 'stdin'] };
  const found = actions[action];
  return found !== undefined && found[0] === method ? found[1] : undefined;
}

/** Serves `route`; throws the {@link HttpError} the API answers. */
export async function serveRoute(state: VercelState, route: VercelRoute | undefined, url: URL, body: unknown, req: IncomingMessage, out: Out): Promise<void> {
  const { method } = out.record;
  const path = url.pathname;
  const notFound = (): never => {
    throw new HttpError(404, 'not_found', `no route ${method} ${path}`);
  };
  if (route === undefined) return notFound();
  if (route === 'create-sandbox') {
    const session = createSession(state, body);
    return out.json(200, { sandbox: sandboxJson(state, session), session: sessionJson(state, session), routes: [] });
  }
  if (route === 'get-sandbox') {
    const name = decodeURIComponent(path.slice('/v2/sandboxes/'.length));
    const session = [...state.sessions.values()].find((s) => s.name === name);
    if (session === undefined) throw new HttpError(404, 'not_found', 'no such sandbox');
    if (session.status === 'stopped') throw new HttpError(410, 'sandbox_stopped', 'the sandbox is stopped');
    return out.json(200, { sandbox: sandboxJson(state, session), session: sessionJson(state, session), routes: [] });
  }
  const match = SESSION_PATH.exec(path)!;
  const session = state.sessions.get(match[1]!);
  if (session === undefined) throw new HttpError(404, 'not_found', 'no such session');
  if (route === 'get-session') return out.json(200, { session: sessionJson(state, session), routes: [] });
  if (session.status === 'stopped') throw new HttpError(410, 'sandbox_stopped', 'the sandbox is stopped');
  if (route === 'stop-session') {
    await stopSession(session);
    return out.json(200, { session: sessionJson(state, session), sandbox: sandboxJson(state, session) });
  }
  if (route === 'start-command') return startCommand(state, session, body, out);
  const command = session.commands.get(COMMAND_PATH.exec(match[2]!)![1]!);
  if (command === undefined) throw new HttpError(404, 'not_found', 'no such command');
  switch (route) {
    case 'get-command':
      if (url.searchParams.get('wait') === 'true') await whenExited(command, req);
      return out.json(200, { command: commandJson(command) });
    case 'logs':
      return streamLogs(state, command, out.stream(), out.record);
    case 'kill':
      // As the service is documented to: the command's own process, not its tree.
      signalLeader(command, isRecord(body) && typeof body['signal'] === 'number' ? body['signal'] : constants.signals.SIGTERM);
      return out.json(200, { command: commandJson(command) });
    case 'stdin':
      return stdin(state, command, body, out);
  }
}
