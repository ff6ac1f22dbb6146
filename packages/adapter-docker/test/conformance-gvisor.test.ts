/**
 * The whole conformance kit, nothing disabled, on a real dockerd of this
 * file's own with gVisor's runsc registered, the run's container created
 * with `runtime: 'runsc'`. What differs under gVisor: the README's "Under
 * gVisor". Skipped with the reason where runsc is missing, except on CI.
 *
 * The per-case limit is the kit's option for a slow backend, raised from its
 * 20 s by what gVisor costs here (measured, README "Under gVisor"): every exec
 * takes 4 to 6 times runc's (about 400 ms on the ptrace platform, which a CI
 * runner without KVM has), so the cases that run dozens of helper commands
 * (background.detach, attach.ended, attach.dispose) take 27 to 48 s alone;
 * and output left unread drains at about 250 KB/s once read again, so
 * flow.unread-beyond-high-water moves its 16 MiB in over a minute. No case's
 * checks change: only the time the kit waits before calling a case hung.
 */
import { describeDockerConformance } from './conformance-suite.js';
import { GVISOR_SKIP, useEngine } from './engine.js';

describeDockerConformance(useEngine({ gvisor: true }), 'adapter-docker: the conformance kit on a real Engine under gVisor (runsc)', GVISOR_SKIP, {
  caseTimeoutMs: 180_000,
});
