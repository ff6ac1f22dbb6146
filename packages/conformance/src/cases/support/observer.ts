/**
 * A handle that looks at a case's environment after the case's own sandbox
 * was closed (spec 9.6, 13.1): from the adapter module's attach hook, or else
 * a second sandbox, which sees the first one's processes only where sandboxes
 * share a host.
 */
import type { Sandbox } from '@sandstream/types';
import { ConformanceFailure, describeError, HarnessError } from '../../assert.js';
import type { CaseContext } from '../../context.js';
import { splitToken } from '../../sandbox-scripts.js';

/** The observing handle, and where it came from. */
export interface Observer {
  readonly sandbox: Sandbox;
  /** From the attach hook: its commands may fail once the environment is gone. */
  readonly attached: boolean;
}

/** A handle that observes the case's environment after its sandbox's close(): the attach hook's, or a second sandbox. */
export async function openObserver(ctx: CaseContext): Promise<Observer> {
  if (ctx.attach === undefined) return { sandbox: await ctx.factory(), attached: false };
  let sandbox: Sandbox;
  try {
    sandbox = await ctx.attach(ctx.sandbox);
  } catch (error) {
    throw new HarnessError(`the adapter module's attach hook failed: ${describeError(error)}`);
  }
  return { sandbox, attached: true };
}

/**
 * Whether the observer shows the environment gone: an attached handle whose
 * commands no longer run (they fail, or do not print what they were asked
 * to). A second sandbox of its own must keep working.
 */
export async function environmentGone(observer: Observer, token: string): Promise<boolean> {
  const expected = `observer-${token}`;
  const [a, b] = splitToken(expected);
  let printed: string;
  try {
    printed = (await observer.sandbox.run(['sh', '-c', 'printf "%s%s" "$1" "$2"', 'sh', a, b], { timeout: 10_000 })).stdoutText;
  } catch (error) {
    if (observer.attached) return true;
    throw new ConformanceFailure(`run() failed in a second sandbox after the first was closed: ${describeError(error)}`);
  }
  if (printed === expected) return false;
  if (observer.attached) return true;
  throw new ConformanceFailure(`a helper command in a second sandbox printed ${JSON.stringify(printed.slice(0, 80))} instead of its marker`);
}
