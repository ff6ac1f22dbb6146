/**
 * The README's TypeScript examples, word for word (test/readme.test.ts checks it), type-checked
 * here; the server's runs in that test.
 */
import { createSshSandbox } from '../src/index.js';
import { startSshd } from '../src/server/index.js';

export async function useExample(): Promise<void> {
  await using sb = await createSshSandbox({
    host: 'build-1.internal',
    username: 'ci',
    privateKeyPath: '/run/secrets/ci_ed25519',
  });
  const result = await sb.run(['sh', '-c', 'echo hi; exit 3'], { timeout: 10_000 });
  console.log(result.exitCode, result.stdoutText); // 3 "hi\n"
}

export async function serverExample(): Promise<void> {
  const server = await startSshd();
  try {
    await using sb = await createSshSandbox({
      host: server.host,
      port: server.port,
      username: server.accounts.unprivileged.username,
      privateKeyPath: server.clientKeyPath,
      knownHostsPath: server.knownHostsPath,
    });
    console.log((await sb.run(['id', '-u'])).stdoutText); // "60123\n"
  } finally {
    await server.stop();
  }
}
