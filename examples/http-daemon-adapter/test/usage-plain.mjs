// Plain JavaScript, as Node 20 runs it: no `await using`.

// #region usage-plain
/** Prints a command's output as it comes; returns its exit code. */
export async function printOutput(sandbox, argv) {
  const proc = sandbox.stream(argv, { timeout: 60_000 });
  try {
    for await (const chunk of proc) {
      (chunk.stream === 'stdout' ? process.stdout : process.stderr).write(chunk.data);
    }
    return (await proc.wait()).exitCode;
  } finally {
    await proc[Symbol.asyncDispose](); // what `await using` does when the scope is left
  }
}
// #endregion usage-plain
