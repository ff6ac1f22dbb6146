// The guide, docs/writing-an-adapter.md, shows this example's code: every
// code block that follows an `<!-- include: <file>#<region> -->` marker is
// the region `// #region <region>` ... `// #endregion <region>` of that
// file (paths relative to this package). `npm run guide:update` rewrites
// the blocks; test/guide.test.ts fails when they differ.
import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const root = new URL('../', import.meta.url);
export const GUIDE = new URL('../../docs/writing-an-adapter.md', root);
export const INCLUDE = /(<!-- include: ([^#\s]+)#(\S+) -->\n```[a-z]*\n)([\s\S]*?)\n```/g;

/** The lines between the region's markers, their common indentation removed. */
export function region(file, name) {
  const lines = readFileSync(new URL(file, root), 'utf8').split('\n');
  const start = lines.findIndex((line) => line.trim() === `// #region ${name}`);
  const end = lines.findIndex((line) => line.trim() === `// #endregion ${name}`);
  if (start < 0 || end < start) throw new Error(`${file} has no region ${JSON.stringify(name)}`);
  const body = lines.slice(start + 1, end);
  const indent = Math.min(...body.filter((line) => line.trim() !== '').map((line) => /^ */.exec(line)[0].length));
  return body.map((line) => line.slice(indent)).join('\n');
}

/** The guide's text with every included block replaced by its region. */
export function fill(text) {
  return text.replace(INCLUDE, (_, head, file, name) => `${head}${region(file, name)}\n\`\`\``);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  writeFileSync(GUIDE, fill(readFileSync(GUIDE, 'utf8')));
}
