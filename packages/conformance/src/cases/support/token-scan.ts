/**
 * Finds processes by a token on their command line, through /proc in the
 * sandbox: how the attach cases show that looking up an unknown id started
 * nothing.
 */
import { check } from '../../assert.js';
import type { CaseContext } from '../../context.js';
import { splitToken } from '../../sandbox-scripts.js';

// Prints the pids whose command line carries the token (given in halves, as the probes do); exit 3 without /proc.
const SCAN_SCRIPT = [
  '[ -d /proc/self ] || exit 3',
  'for d in /proc/[0-9]*; do',
  '  p=${d#/proc/}; [ "$p" = "$$" ] && continue',
  '  cmd=$(tr "\\000" " " < "$d/cmdline" 2>/dev/null) || continue',
  '  case "$cmd" in *"$1$2"*) printf "%s " "$p";; esac',
  'done',
].join('\n');

/** The pids of processes carrying `token`, or undefined where the sandbox has no /proc. */
export async function carrying(ctx: CaseContext, token: string): Promise<number[] | undefined> {
  const result = await ctx.exec(['sh', '-c', SCAN_SCRIPT, 'sh', ...splitToken(token)]);
  if (result.exitCode === 3) return undefined;
  check(result.exitCode === 0, `a helper scanning /proc failed (exit ${result.exitCode}): ${result.stderrText.trim()}`);
  return result.stdoutText.trim().split(/\s+/).filter((p) => p !== '').map(Number);
}
