/**
 * The isolated mode's owner loss (spec 1.4 section 9.11): a command does
 * not outlive the process that started it, killed with SIGKILL, and its
 * tree gets the termination sequence first: SIGTERM, then SIGKILL once the
 * grace period is over. Whether that process made the environment (its
 * init runs the sequence on the namespace, then ends it) or joined one that
 * another process made (its guardian runs it on its own commands, and the
 * environment lives on). Each command records the SIGTERM it gets in a host
 * directory bound writable into the sandbox.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { unless } from '@sandstream/test-support/skips';
import { InvalidArgument, SpawnFailed } from '@sandstream/types';
import { createLocalSandbox } from '../src/index.js';
import { probe } from '../src/isolation/probe.js';
import { isAlive, testSandbox } from './helpers.js';
import { killOwnerAndWait, OWNER_GRACE_MS, running, startOwner, type OwnerExtra } from './owner-helpers.js';

const blocker = probe() instanceof Error ? 'this machine cannot make the namespaces' : undefined;

/** A shell that records SIGTERM and ends on it, its two children ending on it too. */
const RECORDS_TERM = `trap 'echo TERM >> "$0"; exit 0' TERM; sleep 300 & sleep 301 & while :; do wait; done`;
/** A shell that records SIGTERM and waits on, its two children ignoring it. */
const IGNORES_TERM = `trap 'echo TERM >> "$0"' TERM; (trap '' TERM; exec sleep 300) & (trap '' TERM; exec sleep 301) & while :; do wait; done`;

/** A host directory, removed after the test, and the file in it where a command records its signals. */
function signalLog(): { dir: string; log: string } {
  const dir = mkdtempSync(join(tmpdir(), 'sandstream-owner-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return { dir, log: join(dir, 'signals') };
}

/**
 * What the owner is given to run its command where `dir` is bound: in an
 * environment of its own (`made`), or in one of this process's that it
 * joins (`joined`), which must outlive the owner.
 */
async function ownerSetup(how: 'made' | 'joined', dir: string): Promise<{ mode: string; extra: OwnerExtra; environmentLives: () => Promise<void> }> {
  const mounts = [{ source: dir, readonly: false }];
  if (how === 'made') return { mode: 'isolated', extra: { mounts }, environmentLives: async () => undefined };
  const sandbox = testSandbox({ isolation: 'namespaces', mounts });
  onTestFinished(() => sandbox.close());
  // Ready once a command has run: the owner joins it from then on.
  expect((await sandbox.run(['true'])).exitCode).toBe(0);
  const init = sandbox.native.sandbox!.initPid()!;
  return {
    mode: 'joined',
    extra: { join: init },
    async environmentLives() {
      expect(isAlive(init), "the joined environment's init").toBe(true);
      expect((await sandbox.run(['sh', '-c', 'echo alive'])).stdoutText).toBe('alive\n');
    },
  };
}

for (const how of ['made', 'joined'] as const) {
  const whose = how === 'made' ? 'that made its environment' : 'that joined an environment';
  describe(`an isolated owner ${whose}, killed with SIGKILL`, () => {
    unless(it, blocker)("its command's tree gets SIGTERM first and is gone within the bound it states", async () => {
      const { dir, log } = signalLog();
      const { mode, extra, environmentLives } = await ownerSetup(how, dir);
      const { owner, report, token } = await startOwner(mode, ['sh', '-c', RECORDS_TERM, log], OWNER_GRACE_MS, extra);
      expect(report.termination.ownerLossMs).toBe(OWNER_GRACE_MS + 1_000);
      // Proven running first, seen from the host: the shell and its two sleeps.
      await running(token, ['fg']);
      await killOwnerAndWait(owner, token, ['fg']);
      expect(readFileSync(log, 'utf8'), 'the SIGTERM the shell recorded').toBe('TERM\n');
      await environmentLives();
    });

    unless(it, blocker)('a command that ignores SIGTERM gets SIGTERM first, and SIGKILL once the grace period is over', async () => {
      const { dir, log } = signalLog();
      const { mode, extra, environmentLives } = await ownerSetup(how, dir);
      // A longer grace period: the trap runs within it even on a loaded machine.
      const graceMs = 2_000;
      const { owner, report, token } = await startOwner(mode, ['sh', '-c', IGNORES_TERM, log], graceMs, extra);
      expect(report.termination.ownerLossMs).toBe(graceMs + 1_000);
      await running(token, ['fg']);
      const elapsed = await killOwnerAndWait(owner, token, ['fg'], graceMs + 1_000);
      expect(readFileSync(log, 'utf8')).toBe('TERM\n');
      // /proc/uptime, the clock of the init and of the guardian, counts hundredths of a second.
      expect(elapsed, 'SIGKILL came before the grace period was over').toBeGreaterThanOrEqual(graceMs - 20);
      await environmentLives();
    });
  });
}

describe("createLocalSandbox's join option", () => {
  it('joins only an isolated sandbox\'s init, in the isolated mode, and takes neither network nor mounts', () => {
    expect(() => createLocalSandbox({ join: process.pid })).toThrow(/options\.join.*isolation: 'namespaces'/);
    expect(() => createLocalSandbox({ isolation: 'namespaces', join: 1.5 })).toThrow(InvalidArgument);
    expect(() => createLocalSandbox({ isolation: 'namespaces', join: 12, network: true })).toThrow(/options\.network/);
    if (blocker !== undefined) return;
    expect(() => createLocalSandbox({ isolation: 'namespaces', join: process.pid })).toThrow(/not an isolated sandbox's init/);
  });

  unless(it, blocker)("a joined sandbox states its environment's network and mounts, and fails its commands once that environment has ended", async () => {
    const { dir } = signalLog();
    const made = testSandbox({ isolation: 'namespaces', mounts: [{ source: dir, readonly: false }] });
    onTestFinished(() => made.close());
    await made.run(['true']);
    const init = made.native.sandbox!.initPid()!;
    const joined = createLocalSandbox({ isolation: 'namespaces', join: init, graceMs: 100 });
    onTestFinished(() => joined.close());
    expect(joined.native.sandbox).toMatchObject({ network: false, mounts: [{ source: dir, target: dir, readonly: false }] });
    expect(joined.native.sandbox!.initPid()).toBe(init);
    expect((await joined.run(['sh', '-c', 'echo $$ > "$0/pid"; cat /proc/1/cmdline', dir])).stdoutText).toContain('sandstream-init');
    await made.close();
    expect(joined.native.sandbox!.initPid()).toBeUndefined();
    await expect(joined.run(['true'])).rejects.toThrow(SpawnFailed);
  });
});
