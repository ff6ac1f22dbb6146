// What a test sshd is checked with before and while it starts: its version, a free port, its banner.
import { spawnSync } from 'node:child_process';
import { connect, createServer } from 'node:net';

/** sshd's version, `[major, minor]` (`[0, 0]` when `sshd -V` does not say). */
export function sshdVersion(sshd: string): [number, number] {
  const out = spawnSync(sshd, ['-V'], { encoding: 'utf8' });
  const match = /OpenSSH_(\d+)\.(\d+)/.exec(`${out.stderr}${out.stdout}`);
  return match === null ? [0, 0] : [Number(match[1]), Number(match[2])];
}

/** A port free on 127.0.0.1 now (the kernel's pick for port 0). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Whether 127.0.0.1:`port` accepts a connection and sends an `SSH-2.0-` banner within `timeoutMs`. */
export function banner(port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    let seen = '';
    const socket = connect({ host: '127.0.0.1', port });
    const done = (ok: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      seen += chunk.toString('latin1');
      if (seen.includes('SSH-2.0-')) done(true);
    });
    socket.on('error', () => done(false));
    socket.on('close', () => done(false));
  });
}
