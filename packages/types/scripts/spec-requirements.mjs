// The one place that reads requirement statements out of a spec.md.
//
// spec/<version>/spec.md is the source of every requirement's statement: the
// sentence (or sentences) ending at its bold tag `**[SS-...]**`. The
// statement runs from the start of its paragraph or list item, or from the
// previous tag, to the tag; a tag may end a statement of several sentences
// only when no other tag stands between them. requirements.json carries the
// same text (written by `npm run sync-requirements -w @sandstream/conformance`)
// together with what spec.md cannot say (level, section, capability,
// introduced); tests hold both to this extraction.

const TAG = /\*\*\[(SS-[A-Z]+(?:-[A-Z]+)*-[0-9]+)\]\*\*/g;

/** Collapses the line breaks and indentation of wrapped markdown into single spaces. */
function flatten(text) {
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * Returns the statements of every tagged requirement of a spec.md text, in
 * document order, as `[{ id, statement, index }]`.
 */
export function extractStatements(spec) {
  const found = [];
  let previousEnd = 0;
  for (const match of spec.matchAll(TAG)) {
    const index = match.index;
    // The paragraph or list item the tag sits in.
    const paragraph = Math.max(spec.lastIndexOf('\n\n', index), spec.lastIndexOf('\n- ', index));
    let start = paragraph === -1 ? 0 : paragraph + (spec.startsWith('\n- ', paragraph) ? 3 : 2);
    if (previousEnd > start) {
      // Another tag ended a statement in the same paragraph: this one starts after that sentence.
      const rest = spec.slice(previousEnd);
      const next = /^[.;:]?\s*/.exec(rest);
      start = previousEnd + (next ? next[0].length : 0);
    }
    const statement = flatten(spec.slice(start, index));
    found.push({ id: match[1], statement: `${statement}.`, index });
    previousEnd = index + match[0].length;
  }
  return found;
}
