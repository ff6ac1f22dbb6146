/** The whole conformance kit against a real sshd, logged in as an unprivileged account: conformance-suite.ts. */
import { describeSshConformance } from './conformance-suite.js';

describeSshConformance('adapter-ssh: the conformance kit on a real sshd, as an unprivileged account', 'unprivileged');
