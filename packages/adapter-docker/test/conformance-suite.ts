/**
 * The whole conformance kit, nothing disabled, through this package's kit
 * face (`./conformance`: its hooks and default factory) against a real
 * dockerd of the calling file's own, on a container created from the test
 * image under the file's runtime (runc, or gVisor's runsc).
 */
import { fileURLToPath } from 'node:url';
import { describeConformance, type DescribeConformanceOptions } from '@sandstream/conformance/vitest';
import { unless } from '@sandstream/test-support/skips';
import { describe } from 'vitest';
import createSandbox, { conformanceHooks } from '../src/conformance.js';
import { IMAGE, type FileEngine } from './engine.js';

/** Describes the kit over `file`'s engine; `skip` is why not (printed), or undefined; `options`, the kit's besides. */
export function describeDockerConformance(
  file: FileEngine,
  title: string,
  skip: string | undefined,
  options: Pick<DescribeConformanceOptions, 'caseTimeoutMs' | 'concurrency' | 'include'> = {},
): void {
  unless(describe, skip)(title, () => {
    describeConformance({
      ...options,
      factory: createSandbox,
      hooks: {
        async setup() {
          process.env['DOCKER_HOST'] = `unix://${file.engine.socketPath}`;
          process.env['SANDSTREAM_DOCKER_IMAGE'] = IMAGE;
          process.env['SANDSTREAM_DOCKER_RUNTIME'] = file.runtime;
          await conformanceHooks.setup();
        },
        teardown: () => conformanceHooks.teardown(),
        attach: (sandbox) => conformanceHooks.attach(sandbox),
        sever: (process) => conformanceHooks.sever(process),
        owner: (sandbox) => conformanceHooks.owner(sandbox),
      },
      // Spec 1.4, owner.crash: the built module in a second OS process, borrowing the same container.
      ownerModule: fileURLToPath(new URL('../dist/conformance.js', import.meta.url)),
    });
  });
}
