/**
 * Why the isolated local sandbox cannot run here, or undefined where it can.
 * On CI (`CI` set) always undefined: there the tests run, and fail if the
 * machine cannot make the namespaces, instead of skipping.
 */
import { createLocalSandbox, IsolationUnavailable } from '@sandstream/adapter-local';

async function isolationReason(): Promise<string | undefined> {
  if (process.env['CI'] !== undefined) return undefined;
  try {
    await createLocalSandbox({ isolation: 'namespaces' }).close();
    return undefined;
  } catch (error) {
    if (error instanceof IsolationUnavailable) return `namespaces are not available here: ${error.message}`;
    throw error;
  }
}

/** The reason, found once per test file that imports it. */
export const isolation = await isolationReason();
