import type { Sandbox } from '@sandstream/types';

// #region usage-typescript
/** Prints a command's output as it comes; returns its exit code. */
export async function printOutput(sandbox: Sandbox, argv: readonly string[]): Promise<number | null> {
  await using proc = sandbox.stream(argv, { timeout: 60_000 });
  for await (const chunk of proc) {
    (chunk.stream === 'stdout' ? process.stdout : process.stderr).write(chunk.data);
  }
  return (await proc.wait()).exitCode;
} // leaving the scope, however, terminates the command and its tree
// #endregion usage-typescript
