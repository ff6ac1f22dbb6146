/**
 * Faults of a real Engine mid-command (faults-suite.ts), under Docker's
 * default runtime (runc).
 */
import { describeFaults } from './faults-suite.js';
import { SKIP, useEngine } from './engine.js';

describeFaults(useEngine(), 'adapter-docker: faults of a real Engine mid-command', SKIP);
