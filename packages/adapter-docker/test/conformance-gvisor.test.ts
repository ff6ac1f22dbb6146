/**
 * The whole conformance kit, nothing disabled, on a real dockerd of this
 * file's own with gVisor's runsc registered, the run's container created
 * with `runtime: 'runsc'`. What differs under gVisor: the README's "Under
 * gVisor". Skipped with the reason where runsc is missing, except on CI.
 */
import { describeDockerConformance } from './conformance-suite.js';
import { GVISOR_SKIP, useEngine } from './engine.js';

describeDockerConformance(useEngine({ gvisor: true }), 'adapter-docker: the conformance kit on a real Engine under gVisor (runsc)', GVISOR_SKIP);
