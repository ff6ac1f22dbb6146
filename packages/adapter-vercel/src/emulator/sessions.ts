/**
 * The emulator's sandboxes: one session each, created, described and
 * stopped as the API does.
 */
import { sleep } from '@sandstream/remote/emulator';
import { killSession } from './proc.js';
import { isRecord, newId, type SessionState, type VercelState } from './state.js';

export function createSession(state: VercelState, body: unknown): SessionState {
  const now = Date.now();
  const options = isRecord(body) ? body : {};
  const session: SessionState = {
    id: newId('sbx'),
    name: typeof options['name'] === 'string' ? options['name'] : newId('sandbox'),
    status: 'running',
    createdAt: now,
    updatedAt: now,
    stoppedAt: undefined,
    timeout: typeof options['timeout'] === 'number' ? options['timeout'] : 300_000,
    commands: new Map(),
  };
  state.sessions.set(session.id, session);
  return session;
}

/** Stops a session: everything in its VM ends, wherever it moved in the tree; resolves once nothing is left. */
export async function stopSession(session: SessionState): Promise<void> {
  if (session.status === 'stopped') return;
  session.status = 'stopped';
  session.stoppedAt = session.updatedAt = Date.now();
  for (const command of session.commands.values()) clearTimeout(command.timer);
  // A member forked meanwhile is killed too.
  for (let round = 0; round < 100 && killSession(session.id) > 0; round++) await sleep(10);
  for (const command of session.commands.values()) {
    if (command.child.pid !== undefined && command.exitCode === null) {
      try {
        process.kill(command.child.pid, 'SIGKILL');
      } catch {
        // Gone.
      }
    }
  }
}

export function sessionJson(state: VercelState, session: SessionState): Record<string, unknown> {
  return {
    id: session.id,
    memory: 2048,
    vcpus: 1,
    region: 'iad1',
    runtime: 'node24',
    timeout: session.timeout,
    status: session.status,
    requestedAt: session.createdAt,
    startedAt: session.createdAt,
    createdAt: session.createdAt,
    updatedAt: session.updatedAt,
    cwd: state.cwd,
    ...(session.stoppedAt === undefined ? {} : { stoppedAt: session.stoppedAt }),
  };
}

export function sandboxJson(state: VercelState, session: SessionState): Record<string, unknown> {
  return {
    name: session.name,
    persistent: false,
    region: 'iad1',
    vcpus: 1,
    memory: 2048,
    runtime: 'node24',
    timeout: session.timeout,
    createdAt: session.createdAt,
    updatedAt: session.updatedAt,
    currentSessionId: session.id,
    status: session.status,
    cwd: state.cwd,
  };
}
