/**
 * A fake E2B control plane on the emulator's port, for the SDK's non-debug
 * path: `POST /v2/sandboxes` creates a sandbox and issues its envd access
 * token, `POST /v2/sandboxes/{id}/connect` (the SDK's `Sandbox.connect`)
 * gives a running one's details and token again (200; an unknown or killed
 * sandbox is 404: nothing here pauses or resumes), `DELETE /sandboxes/{id}`
 * kills it and every process in it.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { descendants, headerRecord, liveProcesses, ownGroupMembers, signalAll } from '@sandstream/remote/emulator';
import { ownSessionMembers } from './command.js';
import type { Envd } from './context.js';
import type { EnvdRoute } from './types.js';

/** True for a path the control plane serves. */
export function isControlPlanePath(url: string | undefined): boolean {
  return url === '/v2/sandboxes' || url?.startsWith('/sandboxes/') === true || /^\/v2\/sandboxes\/[^/?]+\/connect$/.test(url ?? '');
}

/** Every live process of the commands a sandbox ran: the running ones with their descendants, and their groups' and terminal sessions' members. */
function processesOf(envd: Envd, sandboxId: string): number[] {
  const live = liveProcesses();
  const targets: number[] = [];
  for (const command of envd.table.commands()) {
    if (command.sandboxId !== sandboxId) continue;
    const running = envd.running.has(command.pid);
    if (running) targets.push(command.pid, ...descendants(command.pid, live));
    targets.push(...ownGroupMembers(command.pid, command.leaderStartTicks, running, live), ...ownSessionMembers(command, live));
  }
  return targets;
}

export async function serveControlPlane(envd: Envd, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  const kill = /^\/sandboxes\/([^/?]+)$/.exec(req.url ?? '');
  const connect = /^\/v2\/sandboxes\/([^/?]+)\/connect$/.exec(req.url ?? '');
  const route: EnvdRoute | undefined =
    req.method === 'POST' && req.url === '/v2/sandboxes'
      ? 'create-sandbox'
      : req.method === 'POST' && connect !== null
        ? 'connect-sandbox'
        : req.method === 'DELETE' && kill !== null
          ? 'kill-sandbox'
          : undefined;
  const recorded = envd.recorder.record({ method: req.method ?? 'GET', path: req.url ?? '/', route, headers: headerRecord(req), body: text === '' ? undefined : JSON.parse(text) });
  await envd.recorder.admit();
  const json = (status: number, body?: unknown): void => {
    envd.recorder.answered(recorded, status);
    if (body === undefined) res.writeHead(status).end();
    else res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  const apiKey = envd.options.controlPlane?.apiKey;
  if (apiKey !== undefined && req.headers['x-api-key'] !== apiKey) return json(401, { code: 401, message: 'invalid API key' });
  if (route === 'create-sandbox') {
    const body = (recorded.body ?? {}) as { templateID?: string };
    const sandbox = { sandboxId: `emulated-${envd.sandboxes.size + 1}`, accessToken: randomUUID(), createdAt: Date.now(), killedAt: undefined };
    envd.sandboxes.set(sandbox.sandboxId, sandbox);
    return json(201, {
      sandboxID: sandbox.sandboxId,
      templateID: body.templateID ?? 'base',
      clientID: 'emulated',
      envdVersion: '0.5.7',
      envdAccessToken: sandbox.accessToken,
    });
  }
  if (route === 'connect-sandbox') {
    const sandbox = envd.sandboxes.get(decodeURIComponent(connect![1]!));
    if (sandbox === undefined || sandbox.killedAt !== undefined) return json(404, { code: 404, message: `sandbox ${connect![1]} not found` });
    return json(200, { sandboxID: sandbox.sandboxId, templateID: 'base', clientID: 'emulated', envdVersion: '0.5.7', envdAccessToken: sandbox.accessToken });
  }
  if (route === 'kill-sandbox') {
    const sandbox = envd.sandboxes.get(decodeURIComponent(kill![1]!));
    if (sandbox === undefined || sandbox.killedAt !== undefined) return json(404, { code: 404, message: 'sandbox not found' });
    // The VM goes: every process in it with it.
    signalAll(processesOf(envd, sandbox.sandboxId));
    sandbox.killedAt = Date.now();
    return json(204);
  }
  json(404, { code: 404, message: 'not found' });
}
