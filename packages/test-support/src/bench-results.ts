// A README's benchmark quote, checked against the runs its package records
// in bench/RESULTS.md.

/** The fenced code blocks of a markdown text, each with the last `## ` heading above it. */
export function fencedBlocks(markdown: string): { heading: string; text: string }[] {
  const blocks: { heading: string; text: string }[] = [];
  let heading = '';
  let open: string[] | undefined;
  for (const line of markdown.split('\n')) {
    if (open !== undefined) {
      if (line.startsWith('```')) {
        blocks.push({ heading, text: open.join('\n') });
        open = undefined;
      } else open.push(line.trimEnd());
    } else if (line.startsWith('```')) open = [];
    else if (line.startsWith('## ')) heading = line.slice(3).trim();
  }
  return blocks;
}

/** The part of a markdown text from the `## ` heading that starts with `title` to the next `## ` heading. */
export function markdownSection(markdown: string, title: string): string {
  const start = markdown.indexOf(`\n## ${title}`);
  if (start < 0) throw new Error(`no "## ${title}" section`);
  const end = markdown.indexOf('\n## ', start + 1);
  return markdown.slice(start + 1, end < 0 ? undefined : end);
}
