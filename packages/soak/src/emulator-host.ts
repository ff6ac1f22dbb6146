/**
 * A child process that hosts one emulator (envd for e2b, the Vercel API for
 * vercel) for a soak run, answering the runner over IPC. The emulator stands
 * for the remote side: its records, sockets and the commands it spawns live
 * here, not in the process whose heap, descriptors and handles the soak
 * measures, as they would live on a remote machine.
 *
 * Requests: `{ id, op: 'start', kind }` answers `{ url, recordBase }` (and the
 * Vercel emulator's `credentials`); `{ id, op:
 * 'survivors' }` answers the commands the emulator's process table still
 * lists as running; `{ id, op: 'loop', action }` starts, or stops and
 * answers, a measure of how late this process's 10 ms timer fires (the
 * emulator's responsiveness); `{ id, op: 'close' }` kills everything and answers once
 * done. A lost parent (IPC disconnect) closes the emulator too.
 */
import { startEnvdEmulator, type EnvdEmulator } from '@sandstream/adapter-e2b/emulator';
import { VercelEmulator } from '@sandstream/adapter-vercel/emulator';
import { LoopDelayMonitor } from './self-measures.js';

type Request =
  | { id: number; op: 'start'; kind: 'e2b' | 'vercel' }
  | { id: number; op: 'survivors' }
  | { id: number; op: 'loop'; action: 'start' | 'stop' }
  | { id: number; op: 'close' };

/** How late this process's timers fire during the run: a stalled emulator answers nothing meanwhile. */
let monitor: LoopDelayMonitor | undefined;

let envd: EnvdEmulator | undefined;
let vercel: VercelEmulator | undefined;

async function close(): Promise<void> {
  await envd?.close();
  await vercel?.close();
  envd = vercel = undefined;
}

/** What the emulator's own table says is still running: envd's commands without an end, the Vercel sandboxes' live processes. */
function survivors(): string[] {
  if (envd !== undefined) {
    return envd
      .processes()
      .filter((p) => p.end === undefined)
      .map((p) => `${p.pid} ${[p.config.cmd, ...p.config.args].join(' ').slice(0, 200)}`);
  }
  if (vercel !== undefined) return vercel.processes().map((p) => `${p.pid} ${p.cmdline.slice(0, 200)}`);
  return [];
}

async function handle(request: Request): Promise<unknown> {
  switch (request.op) {
    case 'start':
      if (request.kind === 'e2b') {
        envd = await startEnvdEmulator();
        return { url: envd.url, recordBase: envd.recordBase };
      }
      // Nothing reads its request log; kept, it would hold every byte of stdin written.
      // With seed 002's stdin endpoint (the service has none), so the soak's stdin behaviour runs.
      vercel = await VercelEmulator.start({ recordRequests: false, stdin: true });
      return { url: vercel.url, recordBase: vercel.recordBase, credentials: vercel.credentials };
    case 'survivors':
      return survivors();
    case 'loop': {
      if (request.action === 'start') {
        monitor ??= new LoopDelayMonitor();
        return null;
      }
      const summary = monitor?.stop() ?? null;
      monitor = undefined;
      return summary;
    }
    case 'close':
      await close();
      return null;
  }
}

process.on('message', (request: Request) => {
  handle(request).then(
    (value) => process.send?.({ id: request.id, ok: true, value }),
    (error: unknown) => process.send?.({ id: request.id, ok: false, error: String((error as Error)?.stack ?? error) }),
  );
});

process.on('disconnect', () => {
  void close().finally(() => process.exit(0));
});
