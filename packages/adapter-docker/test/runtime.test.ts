/**
 * The `runtime` option and `runtimeOf` on a real dockerd (runc, the
 * default): the runtime of an owned container as asked or the daemon's
 * default, a borrowed container's as the Engine reports it, and a name the
 * daemon has no runtime under. Under gVisor: gvisor.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { InvalidArgument } from '@sandstream/types';
import { unless } from '@sandstream/test-support/skips';
import { createDockerSandbox, runtimeOf } from '../src/index.js';
import { IMAGE, SKIP, useEngine } from './engine.js';

const file = useEngine();

unless(describe, SKIP)('adapter-docker: the OCI runtime of the container', () => {
  it('an owned container without `runtime` runs under the daemon\'s default, which runtimeOf reads; `runtime: "runc"` is the same', async () => {
    await using sb = await createDockerSandbox({ docker: file.docker, image: IMAGE });
    expect(runtimeOf(sb)).toBe('runc');
    await using asked = await createDockerSandbox({ docker: file.docker, image: IMAGE, runtime: 'runc' });
    expect(runtimeOf(asked)).toBe('runc');
    expect((await asked.native.inspect()).HostConfig.Runtime).toBe('runc');
  });

  it('a borrowed container\'s runtime is the one the Engine reports', async () => {
    const container = await file.container();
    await using sb = await createDockerSandbox({ docker: file.docker, container: container.id });
    expect(runtimeOf(sb)).toBe((await container.inspect()).HostConfig.Runtime);
  });

  it('a runtime the daemon does not have is InvalidArgument naming the option, and no container is left', async () => {
    const before = (await file.docker.listContainers({ all: true })).length;
    const error = await createDockerSandbox({ docker: file.docker, image: IMAGE, runtime: 'no-such-runtime' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgument);
    expect((error as InvalidArgument).key).toBe('options.runtime');
    expect((await file.docker.listContainers({ all: true })).length).toBe(before);
  });

  it('runtimeOf a sandbox of another adapter is InvalidArgument', () => {
    expect(() => runtimeOf({} as never)).toThrow(InvalidArgument);
  });
});
