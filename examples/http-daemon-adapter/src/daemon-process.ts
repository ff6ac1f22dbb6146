import { spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';

/** A running daemon. */
export interface Daemon {
  /** Where it listens, e.g. `http://127.0.0.1:40123/`. */
  readonly url: URL;
  /** Stops it; every command it still runs is killed. */
  stop(): Promise<void>;
}

// #region start-daemon
/**
 * Starts the daemon of daemon.ts as a child process and resolves once it
 * listens. It holds nothing of this process's event loop, and it shuts
 * down by itself when this process ends (its standard input closes).
 */
export function startDaemon(): Promise<Daemon> {
  // The built daemon, whether this module runs from dist/ or (in tests) from src/.
  const script = fileURLToPath(new URL('../dist/daemon.js', import.meta.url));
  const child = spawn(process.execPath, [script], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    let text = '';
    child.once('error', reject);
    void exited.then(() => reject(new Error(`the daemon exited before it listened: ${JSON.stringify(text)}`)));
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      text += chunk;
      const port = /^listening (\d+)\n/.exec(text)?.[1];
      if (port === undefined) return;
      child.unref();
      (child.stdin as Socket).unref();
      (child.stdout as Socket).unref();
      resolve({
        url: new URL(`http://127.0.0.1:${port}/`),
        async stop() {
          child.ref(); // held again until it has exited, or nothing would wait for it
          child.kill('SIGTERM');
          await exited;
        },
      });
    });
  });
}
// #endregion start-daemon
