import { REQUIREMENTS, type SpecHeading } from './requirements.js';

const HEADINGS = new Map(REQUIREMENTS.map((r) => [r.id, r.heading]));

/**
 * The spec section a case belongs to: the heading of spec.md under which the
 * tag of its first requirement stands (derived into `requirements.ts` by
 * `scripts/sync-requirements.mjs`). Undefined when that requirement is not one
 * of this kit's spec revision, as in a report written by another kit.
 */
export function caseSection(c: { readonly requirements: readonly string[] }): SpecHeading | undefined {
  const first = c.requirements[0];
  return first === undefined ? undefined : HEADINGS.get(first);
}

/** A section as spec.md's heading reads, number then title: `9.8 The termination sequence`. */
export function sectionName(heading: SpecHeading): string {
  return `${heading.number} ${heading.title}`;
}

/**
 * The name of the file under `src/cases/` that holds a section's cases: its
 * number, a dash, and its title as a slug without a leading "The"
 * (`9.8-termination-sequence.ts`, `5.2-on-output.ts`), so a reader goes from
 * the spec's heading to its cases in one step.
 */
export function sectionFileName(heading: SpecHeading): string {
  const slug = heading.title
    .replace(/^The /, '')
    .replace(/([a-z])([A-Z])/g, '$1-$2')
    .toLowerCase()
    .replace(/'/g, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
  return `${heading.number}-${slug}.ts`;
}

/** The group of a case: the first segment of its id (`teardown` in `teardown.break`). */
export function caseGroup(id: string): string {
  return id.split('.')[0] ?? id;
}
