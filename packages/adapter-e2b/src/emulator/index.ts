/**
 * An emulator of E2B's in-sandbox daemon (envd) for tests: a Connect server
 * on 127.0.0.1 that speaks envd's process service over real local
 * processes. The e2b SDK (debug mode, `sandboxUrl` pointing here) and this
 * package's adapter both run against it. Built on the emulator kit
 * (`@sandstream/remote/emulator`): it records every request, holds each
 * for a settable latency, takes the kit's faults and exposes its process
 * table, so tests can assert what a client did and what teardown left
 * behind. `packages/remote/EMULATORS.md` says what it reproduces of envd,
 * and how strictly.
 *
 * @packageDocumentation
 */
import { createServer, type Server } from 'node:http';
import { createContextValues } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import {
  closeServer,
  Connections,
  descendants,
  FaultQueue,
  groupMembers,
  headerRecord,
  liveProcesses,
  makeRecordArea,
  listenLocal,
  ownGroupMembers,
  ProcessTable,
  RequestRecorder,
  signalAll,
  taggedProcesses,
} from '@sandstream/remote/emulator';
import { ownSessionMembers, type Command } from './command.js';
import { sandboxOf, type Envd, type RawRequest } from './context.js';
import { isControlPlanePath, serveControlPlane } from './control-plane.js';
import { processRoutes } from './process-service.js';
import type { EnvdEmulator, EnvdEmulatorOptions, EnvdRoute } from './types.js';
import { checkEnvdFault, rawKey } from './wire.js';

export { endFields, signalFromStatus, type EndFields } from '../status.js';
export type { EmulatedProcess, EmulatedSandbox, EnvdEmulator, EnvdEmulatorOptions, EnvdFault, EnvdMethod, EnvdRoute, RecordedRequest } from './types.js';

/**
 * Kills what is still the emulator's: running commands with their
 * descendants, live members of the groups its commands led, and of the
 * sessions its terminal commands led (a shell's jobs each have a group of
 * their own, and outlive it holding the terminal).
 */
function killEverything(envd: Envd): void {
  const live = liveProcesses();
  const targets = new Set<number>();
  for (const command of envd.running.values()) {
    targets.add(command.pid);
    for (const pid of descendants(command.pid, live)) targets.add(pid);
  }
  const grouped = new Set(live.map((entry) => entry.pgrp));
  for (const command of envd.table.commands()) {
    for (const pid of ownSessionMembers(command, live)) targets.add(pid);
    if (!grouped.has(command.pid)) continue;
    for (const pid of ownGroupMembers(command.pid, command.leaderStartTicks, envd.running.has(command.pid), live)) targets.add(pid);
  }
  signalAll(targets);
}

/**
 * Starts an envd emulator on 127.0.0.1 with a random port.
 *
 * @example
 * ```ts
 * import { Sandbox } from 'e2b';
 * import { startEnvdEmulator } from '@sandstream/adapter-e2b/emulator';
 * await using envd = await startEnvdEmulator();
 * const sandbox = await Sandbox.create({ debug: true, sandboxUrl: envd.url });
 * const result = await sandbox.commands.run('echo hello');
 * ```
 */
export async function startEnvdEmulator(options: EnvdEmulatorOptions = {}): Promise<EnvdEmulator> {
  const envd: Envd = {
    options,
    recorder: new RequestRecorder<EnvdRoute>({ keep: options.recordRequests ?? true, latencyMs: options.latencyMs ?? 0 }),
    faults: new FaultQueue<EnvdRoute>(),
    table: new ProcessTable<Command>(),
    running: new Map(),
    sandboxes: new Map(),
  };
  const raws = new WeakMap<object, RawRequest>();
  const connectHandler = connectNodeAdapter({
    routes: processRoutes(envd),
    contextValues: (req) => createContextValues().set(rawKey, raws.get(req)),
  });
  const server: Server = createServer((req, res) => {
    raws.set(req, { req, res });
    if (req.method === 'GET' && (req.url === '/health' || req.url?.startsWith('/health?'))) {
      const recorded = envd.recorder.record({ method: 'GET', path: '/health', route: 'health', headers: headerRecord(req) });
      void envd.recorder.admit().then(() => {
        const status = sandboxOf(envd, req)?.killedAt !== undefined ? 502 : 204;
        envd.recorder.answered(recorded, status);
        res.writeHead(status).end();
      });
      return;
    }
    if (options.controlPlane !== undefined && isControlPlanePath(req.url)) {
      void serveControlPlane(envd, req, res);
      return;
    }
    connectHandler(req, res);
  });
  const connections = new Connections(server);
  const port = await listenLocal(server);
  const records = makeRecordArea('envd');

  let closing: Promise<void> | undefined;
  const emulator: EnvdEmulator = {
    url: `http://127.0.0.1:${port}`,
    port,
    recordBase: records.recordBase,
    requests: envd.recorder.requests,
    requestCounts: () => envd.recorder.counts(),
    get latencyMs() {
      return envd.recorder.latencyMs;
    },
    set latencyMs(ms: number) {
      envd.recorder.latencyMs = ms;
    },
    processes: () => envd.table.commands(),
    process: (pid) => envd.table.byPid(pid),
    sandboxes: () => [...envd.sandboxes.values()].map((sandbox) => ({ ...sandbox })),
    groupMembers: (pgid) => groupMembers(pgid),
    descendants: (pid) => descendants(pid),
    tagged: (id) => taggedProcesses(id),
    inject(fault) {
      checkEnvdFault(fault);
      envd.faults.inject(fault);
    },
    pendingFaults: () => envd.faults.pending(),
    dropConnections: () => connections.destroyAll(),
    close() {
      closing ??= (async () => {
        killEverything(envd);
        await closeServer(server, connections);
        records.remove();
      })();
      return closing;
    },
    [Symbol.asyncDispose]: () => emulator.close(),
  };
  return emulator;
}
