/**
 * The sshd of one test file: started in `beforeAll`, stopped in `afterAll`
 * (in a `describe`, that block's). Where none can start, the file's tests
 * are skipped with the reason; where `CI` is set they run and fail instead.
 */
import { afterAll, beforeAll } from 'vitest';
import { sshdMissing, startSshd, type SshAccount, type TestSshd } from '../src/server/index.js';
import type { SshSandboxOptions } from '../src/options.js';

/** Why this file's tests are skipped, or undefined to run them (on CI: always run). */
export const SKIP: string | undefined = process.env['CI'] !== undefined ? undefined : sshdMissing();

/** The file's server, set once `beforeAll` ran. */
export interface FileServer {
  server: TestSshd;
  /** Options that reach `account` (default root) on the server with its client key and known_hosts. */
  options(account?: SshAccount): SshSandboxOptions & { readonly username: string };
}

/** Starts the file's sshd (see the module comment). */
export function useServer(): FileServer {
  const file = {} as FileServer;
  beforeAll(async () => {
    if (SKIP !== undefined) return;
    file.server = await startSshd();
    file.options = (account = file.server.accounts.root) => ({
      host: file.server.host,
      port: file.server.port,
      username: account.username,
      privateKeyPath: file.server.clientKeyPath,
      knownHostsPath: file.server.knownHostsPath,
    });
  }, 60_000);
  afterAll(async () => {
    await file.server?.stop();
  }, 60_000);
  return file;
}
