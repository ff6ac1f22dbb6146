/**
 * Crashing an owner and watching its tree go (spec 1.4 section 9.11,
 * SS-OWNER-1): shared by `owner.crash` (pipes) and `pty.owner-crash` (a
 * terminal, spec 1.5), and the bound `owner.link-lost` holds to.
 */
import { check, ConformanceFailure, HarnessError } from '../../assert.js';
import type { CaseContext } from '../../context.js';
import type { OwnerVia } from '../../owner-launcher.js';
import { bound, readMarker, scratch } from './observe.js';
import { killTree, named, openLookout, ownerLauncherOf, ROLES, scanTree, type LaunchedOwner, type Lookout, type Seen } from './owner.js';

/**
 * The bound owner.crash holds a sandbox that states no `ownerLossMs` to (a
 * 1.3 adapter, which fails owner.bound-stated): the remote backends' 10 s at
 * their defaults, after its own grace period and kill wait.
 */
const UNSTATED_OWNER_LOSS_MS = 10_000;

/** The bound of owner loss the case holds the sandbox to, and where it came from. */
export function ownerLossOf(ctx: CaseContext): { ms: number; source: string } {
  const { ownerLossMs, graceMs, killWaitMs } = ctx.termination;
  if (ownerLossMs !== undefined) return { ms: ownerLossMs, source: "the sandbox's `termination.ownerLossMs`" };
  return {
    ms: graceMs + killWaitMs + UNSTATED_OWNER_LOSS_MS,
    source: `the kit's fallback, the grace period and kill wait plus ${UNSTATED_OWNER_LOSS_MS} ms, since the sandbox states no \`termination.ownerLossMs\` (SS-OWNER-2)`,
  };
}

/** Waits until the lookout sees every process of the tree, and the leader's file through the case's sandbox. */
export async function provePresence(ctx: CaseContext, look: Lookout, token: string, dir: string): Promise<Seen[]> {
  const within = await bound(ctx, 5_000);
  const deadline = performance.now() + within;
  let seen: Seen[] = [];
  for (;;) {
    seen = await scanTree(look.exec, token);
    const all = ROLES.every((role) => seen.some((s) => s.role === role));
    if (all && (await readMarker(ctx, `${dir}/leader-up`)) !== undefined) return seen;
    if (performance.now() > deadline) break;
    await ctx.sleep(25);
  }
  throw new HarnessError(
    `the owner process reported its command started, but the kit does not see its tree through ${look.what} ` +
      `(it sees ${seen.length === 0 ? 'none of it' : named(seen)}, and ${dir}/leader-up ` +
      `${(await readMarker(ctx, `${dir}/leader-up`)) === undefined ? 'is missing' : 'exists'}): its absence after the kill would prove nothing. ` +
      'Export `conformanceHooks.owner` answering the `env` under which the adapter module\'s factory makes sandboxes on the environment of the sandbox it is given ' +
      '(the same processes and files), and `conformanceHooks.attach` where the case\'s sandbox cannot see them itself',
  );
}

/**
 * Starts `tree(token, dir)` in an owner process (`via`), proves the kit sees all of it, kills the
 * owner with SIGKILL, and fails unless the whole tree is gone within the bound of owner loss, its
 * background child having recorded SIGTERM. `what` names the command in a failure.
 */
export async function crashOwner(ctx: CaseContext, via: OwnerVia, tree: (token: string, dir: string) => string[], what = 'foreground command'): Promise<void> {
  const launch = await ownerLauncherOf(ctx);
  const token = ctx.token('owner');
  const dir = await scratch(ctx);
  const look = await openLookout(ctx);
  let owner: LaunchedOwner | undefined;
  try {
    owner = await launch(tree(token, dir), via, await bound(ctx, 30_000));
    // Presence first: the kit must see the tree from its side, or its absence later proves nothing.
    await provePresence(ctx, look, token, dir);
    const { ms, source } = ownerLossOf(ctx);
    const within = await bound(ctx, ms);
    const lostAt = await owner.crash();
    let left: Seen[];
    for (;;) {
      left = await scanTree(look.exec, token);
      if (left.length === 0) break;
      if (performance.now() - lostAt > within) {
        throw new ConformanceFailure(
          `the owner process was killed with SIGKILL ${Math.round(performance.now() - lostAt)} ms ago, and its ${what} still runs: ${named(left)} ` +
            `(the bound is ${ms} ms, from ${source}${within > ms ? `, ${within} ms on this backend's measured round trip` : ''})`,
        );
      }
      await ctx.sleep(25);
    }
    const term = await readMarker(ctx, `${dir}/background-term`);
    check(term?.includes('term') === true, `the tree of a crashed owner's ${what} was ended without SIGTERM first: its background child, which records SIGTERM, never recorded it (section 9.8)`);
  } finally {
    await owner?.dispose();
    await killTree(ctx, token);
    await look.close();
  }
}
