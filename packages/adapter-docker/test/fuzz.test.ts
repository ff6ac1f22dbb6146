/**
 * Fuzzed argv, env, cwd and options through the Docker adapter against a
 * real dockerd (the suite every adapter runs, from
 * @sandstream/test-support/option-fuzz): an exact round trip or the spec's
 * typed error, no exec start for a refused call, nothing left running. The
 * suite's working directories are made in a host directory bind-mounted at
 * the same path into the container.
 */
import { randomUUID } from 'node:crypto';
import { describe } from 'vitest';
import Docker from 'dockerode';
import { describeOptionFuzz } from '@sandstream/test-support/option-fuzz';
import { unless } from '@sandstream/test-support/skips';
import { createDockerSandbox } from '../src/index.js';
import { instrument, SKIP, useEngine, type Seen } from './engine.js';

const file = useEngine();
const MARKER = 'SANDSTREAM_DOCKER_FUZZ';
const RUN_ID = randomUUID();
let container: Docker.Container | undefined;
let docker: Docker | undefined;
let seen: Seen | undefined;

async function open() {
  if (container === undefined) {
    container = await file.container();
    docker = new Docker({ socketPath: file.engine.socketPath });
    seen = instrument(docker);
  }
  return createDockerSandbox({ docker: docker!, container: container.id, graceMs: 300, env: { [MARKER]: RUN_ID } });
}

unless(describe, SKIP)('adapter-docker: option fuzz on a real Engine', () => {
  describeOptionFuzz('adapter-docker', open, {
    runs: 25,
    marker: { name: MARKER, value: RUN_ID },
    startCount: () => seen?.starts ?? 0,
    get scratchParent() {
      return file.scratch;
    },
  });
});
