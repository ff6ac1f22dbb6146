// The TypeScript examples of a README, for tests that check each one stands,
// word for word, in a type-checked examples file.
import { readFileSync } from 'node:fs';

/** The ```ts blocks of a markdown file, import lines removed and trimmed. */
export function typescriptBlocks(url: URL): string[] {
  const text = readFileSync(url, 'utf8');
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) =>
    match[1]!
      .split('\n')
      .filter((line) => !line.startsWith('import '))
      .join('\n')
      .trim(),
  );
}
