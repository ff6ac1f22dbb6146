/**
 * The whole conformance kit, nothing disabled, through this package's kit
 * face (`./conformance`: its hooks and default factory, configured by the
 * environment) against a real sshd of the calling file's own, logged in as
 * the file's account.
 */
import { fileURLToPath } from 'node:url';
import { describeConformance } from '@sandstream/conformance/vitest';
import { unless } from '@sandstream/test-support/skips';
import { describe } from 'vitest';
import createSandbox, { conformanceHooks } from '../src/conformance.js';
import { SKIP, useServer } from './server.js';

/** Describes the kit over a server of the file's own, as `account`. */
export function describeSshConformance(title: string, account: 'root' | 'unprivileged'): void {
  unless(describe, SKIP)(title, () => {
    const file = useServer();
    describeConformance({
      factory: createSandbox,
      hooks: {
        async setup() {
          const { server } = file;
          process.env['SANDSTREAM_SSH_HOST'] = server.host;
          process.env['SANDSTREAM_SSH_PORT'] = String(server.port);
          process.env['SANDSTREAM_SSH_USER'] = server.accounts[account].username;
          process.env['SANDSTREAM_SSH_KEY'] = server.clientKeyPath;
          process.env['SANDSTREAM_SSH_KNOWN_HOSTS'] = server.knownHostsPath;
          await conformanceHooks.setup();
        },
        teardown: () => conformanceHooks.teardown(),
        attach: (sandbox) => conformanceHooks.attach(sandbox),
        sever: (process) => conformanceHooks.sever(process),
        owner: (sandbox) => conformanceHooks.owner(sandbox),
      },
      // Spec 1.4, owner.crash: the built module in a second OS process, on the same server and account.
      ownerModule: fileURLToPath(new URL('../dist/conformance.js', import.meta.url)),
    });
  });
}
