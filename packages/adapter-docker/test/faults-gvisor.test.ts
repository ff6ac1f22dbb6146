/**
 * Faults of a real Engine mid-command (faults-suite.ts) under gVisor: the
 * containers the tests borrow run under runsc. Skipped with the reason where
 * runsc is missing, except on CI.
 */
import { describeFaults } from './faults-suite.js';
import { GVISOR_SKIP, useEngine } from './engine.js';

describeFaults(useEngine({ gvisor: true }), 'adapter-docker: faults of a real Engine mid-command under gVisor (runsc)', GVISOR_SKIP);
