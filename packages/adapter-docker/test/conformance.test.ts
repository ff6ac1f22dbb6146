/**
 * The whole conformance kit, nothing disabled, on a real dockerd of this
 * file's own, under Docker's default runtime (runc): conformance-suite.ts.
 */
import { describeDockerConformance } from './conformance-suite.js';
import { SKIP, useEngine } from './engine.js';

describeDockerConformance(useEngine(), 'adapter-docker: the conformance kit on a real Engine', SKIP);
