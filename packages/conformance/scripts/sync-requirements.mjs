// Brings the kit's copy of the requirements in line with the spec it checks.
//
// spec/<version>/spec.md is the one source of every requirement's statement
// (the text ending at its **[SS-...]** tag). This script
//   1. copies each statement from spec.md into spec/<version>/requirements.json,
//      which adds what spec.md cannot say (level, section, capability, introduced);
//   2. regenerates src/requirements.ts from requirements.json, adding to each
//      requirement the heading of spec.md its tag stands under (its `heading`),
//      which only the TS carries: requirements.json of a released revision is frozen.
// `--check` changes nothing and exits 1 when either file is out of date.
// The version is this package's "sandstream.specVersion".
//
//   npm run sync-requirements -w @sandstream/conformance [-- --check]
import { readFileSync, writeFileSync } from 'node:fs';
import { extractStatements } from '../../types/scripts/spec-requirements.mjs';

const check = process.argv.includes('--check');
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const version = pkg.sandstream.specVersion;
const specDir = new URL(`../../../spec/${version}/`, import.meta.url);
const jsonUrl = new URL('requirements.json', specDir);
const tsUrl = new URL('../src/requirements.ts', import.meta.url);

const specText = readFileSync(new URL('spec.md', specDir), 'utf8');
const tags = extractStatements(specText);
const statements = new Map(tags.map((t) => [t.id, t.statement]));
const document = JSON.parse(readFileSync(jsonUrl, 'utf8'));
const problems = [];
for (const requirement of document.requirements) {
  const statement = statements.get(requirement.id);
  if (statement === undefined) problems.push(`${requirement.id} is in requirements.json but has no tag in spec.md`);
  else requirement.statement = statement;
}

// The numbered headings of spec.md (`### 9.8 The termination sequence`, `## 10. ExecResult and
// exit status`), in document order, the trailing dot of a top-level number dropped.
const headings = [...specText.matchAll(/^#{2,4} (\d+(?:\.\d+)*)\.? (.+?)\s*$/gm)].map((m) => ({ index: m.index, number: m[1], title: m[2] }));
/** The heading a tag stands under: the last numbered heading before it. */
function headingOf(tag) {
  const before = headings.filter((h) => h.index < tag.index).at(-1);
  if (before === undefined) problems.push(`${tag.id} stands under no numbered heading of spec.md`);
  return before === undefined ? undefined : { number: before.number, title: before.title };
}
const headingById = new Map(tags.map((t) => [t.id, headingOf(t)]));
const listed = new Set(document.requirements.map((r) => r.id));
for (const id of statements.keys()) {
  if (!listed.has(id)) problems.push(`${id} is tagged in spec.md but has no entry in requirements.json (add its level, section and introduced)`);
}
if (problems.length > 0) {
  process.stderr.write(`${problems.join('\n')}\n`);
  process.exit(1);
}

function renderRequirementsTs(doc) {
  const requirements = doc.requirements.map((requirement) => ({ ...requirement, heading: headingById.get(requirement.id) }));
  return `// Generated from spec/${doc.specVersion}/requirements.json and spec/${doc.specVersion}/spec.md by scripts/sync-requirements.mjs; do not edit.
// spec/${doc.specVersion}/spec.md is the source of each statement and heading; test/requirements.test.ts holds all three equal.
// Refresh with: npm run sync-requirements -w @sandstream/conformance

/** A numbered heading of spec.md: \`### 9.8 The termination sequence\` is \`{ number: '9.8', title: 'The termination sequence' }\`. */
export interface SpecHeading {
  /** The section number, without a trailing dot: \`9.8\`, \`10\`. */
  readonly number: string;
  /** The heading's words as spec.md writes them. */
  readonly title: string;
}

/** One requirement of the spec, as requirements.json states it, with the heading spec.md tags it under. */
export interface Requirement {
  readonly id: string;
  readonly level: 'MUST' | 'SHOULD';
  /** The section requirements.json files it under, in words (\`stream()\`); {@link Requirement.heading} is spec.md's own. */
  readonly section: string;
  /** The requirement's sentence in spec.md, up to its tag. */
  readonly statement: string;
  readonly introduced: string;
  /** The requirement applies only to an adapter that advertises this capability. */
  readonly capability?: string;
  /** The requirement applies only to an adapter that does not advertise this capability. */
  readonly without?: string;
  /**
   * \`harness\`: the requirement binds the kit and the testees it talks to (spec section 18),
   * not a Sandbox; the kit's own tests prove it, and no case does (spec sections 1 and 16).
   */
  readonly provedBy?: 'harness';
  /**
   * The numbered heading of spec.md under which the requirement's tag stands (the last one
   * before it). Derived from spec.md, not stated in requirements.json; a case's section is
   * the heading of its first requirement.
   */
  readonly heading: SpecHeading;
}

/** The spec revision these requirements belong to. */
export const REQUIREMENTS_SPEC_VERSION = ${JSON.stringify(doc.specVersion)};

/** Every requirement of the spec revision this kit checks. */
export const REQUIREMENTS: readonly Requirement[] = ${JSON.stringify(requirements, null, 2)};
`;
}

const json = `${JSON.stringify(document, null, 2)}\n`;
const ts = renderRequirementsTs(document);
const stale = [];
if (readFileSync(jsonUrl, 'utf8') !== json) stale.push(`spec/${version}/requirements.json`);
if (readFileSync(tsUrl, 'utf8') !== ts) stale.push('packages/conformance/src/requirements.ts');
if (check) {
  if (stale.length > 0) {
    process.stderr.write(`out of date with spec/${version}/spec.md: ${stale.join(', ')}\nRun: npm run sync-requirements -w @sandstream/conformance\n`);
    process.exit(1);
  }
} else {
  writeFileSync(jsonUrl, json);
  writeFileSync(tsUrl, ts);
  if (stale.length > 0) process.stdout.write(`updated ${stale.join(', ')}\n`);
}
