/** The whole conformance kit against a real sshd, logged in as root: conformance-suite.ts. */
import { describeSshConformance } from './conformance-suite.js';

describeSshConformance('adapter-ssh: the conformance kit on a real sshd, as root', 'root');
