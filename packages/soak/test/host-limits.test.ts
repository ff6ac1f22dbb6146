/**
 * The soak under a low file-descriptor limit and a low process limit, for
 * every adapter (short form; the long runs are in RELIABILITY.md): every
 * command either completes byte-exact or fails with a typed error
 * (`SpawnFailed`, `TransportError`), nothing crashes the host, nothing is
 * left running or open. The run is the CLI in a child process: the limits
 * are set on that process (prlimit on its own pid, once its warm-up is
 * done), and as root the process limit needs it to run as another uid.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { limitSelfUnavailable, runJsonChild } from '@sandstream/test-support/host-limits';
import { unless } from '@sandstream/test-support/skips';
import { ADAPTERS, type SoakReport } from '../src/index.js';
import { unknownViolations } from './known.js';
import { missingHere } from './missing-here.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
/** Enough for the limit to bite several times; the remote adapters' emulators take longer per process. */
const COUNT: Readonly<Record<string, number>> = { local: 60, e2b: 30, vercel: 30, docker: 30, ssh: 30 };

/**
 * Why a limit is not run for an adapter. The Docker target's commands are dockerd's processes,
 * not the soak's: the client forks nothing per command, so a process limit on it has nothing to
 * bite, and the process-limited soak runs as another uid (root is exempt from the limit), which
 * can neither start a dockerd nor reach a root daemon's socket. The SSH target's commands are
 * sshd's processes in the same way (the client is ssh2, in this process), and its sshd of its own
 * needs root. Their descriptors are the soak's own (a socket or two per command for Docker, a
 * socket per connection of up to eight channels for SSH), so the descriptor limit runs.
 */
function notApplicable(adapter: string, limit: string): string | undefined {
  if (limit !== 'processes') return undefined;
  if (adapter === 'docker') return "the Docker target's commands are dockerd's processes, not the soak's, and a soak of another uid cannot start dockerd";
  if (adapter === 'ssh') return "the SSH target's commands are sshd's processes, not the soak's, and a soak of another uid cannot start sshd";
  return undefined;
}

/** Runs the soak CLI with `flags`; resolves with its exit status, its JSON report and its stderr. */
async function soak(adapter: string, flags: readonly string[]): Promise<{ code: number | null; report: SoakReport | undefined; stderr: string }> {
  const args = ['--expose-gc', CLI, '--adapter', adapter, '--count', String(COUNT[adapter]), '--concurrency', '10', '--seed', '7', '--kill-wait-ms', '5000', '--json', ...flags];
  return runJsonChild<SoakReport>([process.execPath, ...args], { boundMs: 170_000 });
}

/**
 * Below what the run's first ten starts, issued at once, need (a local command takes three pipes
 * and at least one task), so the limit bites at the start whatever the machine's pace.
 */
const LIMITS = [
  // Docker: a socket per running command (its attach), so ten at once cannot fit in 4.
  { name: 'file descriptors', flags: (adapter: string) => ['--fd-headroom', adapter === 'docker' ? '4' : '24'] },
  { name: 'processes', flags: (adapter: string) => ['--proc-headroom', adapter === 'local' ? '8' : '30'] },
] as const;

describe('soak under host limits, short form', () => {
  for (const adapter of ADAPTERS) {
    for (const { name, flags } of LIMITS) {
      unless(it, notApplicable(adapter, name) ?? missingHere(adapter) ?? limitSelfUnavailable())(`${adapter}: ${COUNT[adapter]} processes with few ${name}: typed errors only, nothing lost or left`, async () => {
        const { code, report, stderr } = await soak(adapter, flags(adapter));
        expect(report, stderr).toBeDefined();
        const violations = report!.violations.map((v) => `[${v.kind}] ${v.message}`);
        expect(unknownViolations(adapter, violations)).toEqual([]);
        expect(code).toBe(violations.length === 0 ? 0 : 1);
        expect(report!.finished).toBe(COUNT[adapter]);
        expect(report!.uncaughtExceptions + report!.unhandledRejections).toBe(0);
        // The limit did bite for the local adapter, which starts a host process (and pipes) per
        // command, and for Docker's descriptors, a socket or two per command.
        const refused = Object.values(report!.hostLimits!.refused).reduce((a, b) => a + b, 0);
        if (adapter === 'local' || adapter === 'docker') expect(refused + report!.hostLimits!.forkRefused).toBeGreaterThan(0);
        console.log(`${adapter}, few ${name}: ${JSON.stringify(report!.hostLimits)}, byte-exact ${report!.verified.processes}`);
      }, 180_000);
    }
  }
});
