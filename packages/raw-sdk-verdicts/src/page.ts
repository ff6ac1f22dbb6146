/**
 * `docs/raw-sdk-verdicts.md` from a record, the vendors' descriptions and
 * the explanations. The same inputs give the same page, byte for byte.
 */
import { BY_CHANCE, EXPLANATIONS, explanationKeys, type Explanations } from './explanations.js';
import { MAX_SAW } from './shorten.js';
import type { CaseVerdict, RunRecord, VendorRecord, VerdictsRecord } from './record.js';
import type { Vendor } from './vendor.js';

/** Where the page and its record live, from the repository's root. */
export const PAGE_PATH = 'docs/raw-sdk-verdicts.md';
export const RECORD_PATH = 'packages/raw-sdk-verdicts/verdicts.json';

/** A page that cannot be written as asked: a failure nobody explained, an explanation nothing uses, a vendor without a run. */
export class PageError extends Error {
  override readonly name = 'PageError';
}

/** The kit's verdict and counts in one line. */
export function summaryLine(run: RunRecord, specVersion: string): string {
  const { pass, fail, skipped, disabled, error } = run.counts;
  const verdict = !run.ok ? 'DOES NOT CONFORM' : disabled > 0 ? 'PASSED the cases that ran' : 'CONFORMS';
  return `${verdict} to Sandstream ${specVersion}: ${pass} passed, ${fail} failed, ${skipped} skipped, ${disabled} disabled, ${error} errors`;
}

/** A table cell: pipes escaped, as GitHub's tables need even inside code. */
function cell(text: string): string {
  return text.replaceAll('|', '\\|');
}

/** Inline code that may itself hold backticks. */
function code(text: string): string {
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(longest + 1);
  const pad = text.startsWith('`') || text.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${text}${pad}${fence}`;
}

/** The explanation of a failure, and the key it came from. */
function explain(vendor: string, failure: CaseVerdict, explanations: Explanations, used: Set<string>): string {
  const table = explanations[vendor] ?? {};
  for (const key of explanationKeys(failure.id, failure.requirements)) {
    const text = table[key];
    if (text !== undefined) {
      used.add(key);
      return text;
    }
  }
  throw new PageError(
    `${vendor}: nothing explains why ${failure.id} (${failure.requirements.join(', ')}) ${failure.status === 'fail' ? 'fails' : 'errors'} ("${failure.saw}"): add an entry to EXPLANATIONS.${vendor} in src/explanations.ts`,
  );
}

function failureTable(vendor: string, failures: readonly CaseVerdict[], explanations: Explanations, used: Set<string>): string[] {
  const lines = ['| requirements | case | what the kit saw | why |', '| --- | --- | --- | --- |'];
  let previous: string | undefined;
  for (const failure of failures) {
    const why = explain(vendor, failure, explanations, used);
    const status = failure.status === 'error' ? ' (harness error)' : '';
    const shown = why === previous ? 'as above' : why;
    previous = why;
    lines.push(`| ${failure.requirements.join(', ')} | ${code(failure.id)}${status} | ${cell(code(failure.saw))} | ${cell(shown)} |`);
  }
  return lines;
}

/** Capabilities the adapter advertises and the raw wrapper does not: their cases are skipped on the raw side. */
function notAdvertised(record: VendorRecord): string[] {
  const raw = record.raw.capabilities as Readonly<Record<string, boolean>>;
  const adapter = record.control.capabilities as Readonly<Record<string, boolean>>;
  return Object.keys(adapter).filter((name) => adapter[name] === true && raw[name] !== true);
}

function vendorSection(vendor: Vendor, record: VendorRecord, specVersion: string, explanations: Explanations, used: Set<string>): string[] {
  const lines = [`## ${vendor.title}: \`${record.sdk}\` ${record.sdkVersion}`, ''];
  lines.push(`Backend: ${vendor.backend}.`, '', 'How the SDK is wrapped:', '');
  for (const line of vendor.wrapping) lines.push(`- ${line}`);
  lines.push('', 'The kit\'s summary of each run:', '');
  lines.push('| run | sandbox | summary |', '| --- | --- | --- |');
  lines.push(`| the raw SDK | \`${record.raw.name}\` | ${summaryLine(record.raw, specVersion)} |`);
  lines.push(`| \`${record.adapter}\` | \`${record.control.name}\` | ${summaryLine(record.control, specVersion)} |`);
  lines.push('');
  const missing = notAdvertised(record);
  if (missing.length > 0) {
    const names = missing.map((name) => `\`${name}\``).join(', ');
    lines.push(`The raw SDK does not advertise ${names}, which the adapter does: those cases are skipped on the raw side.`, '');
  }
  if (record.control.failures.length > 0) {
    lines.push(`The adapter's own failures in this run: ${record.control.failures.map((f) => `${code(f.id)} (${code(f.saw)})`).join('; ')}.`, '');
  }
  if (record.raw.failures.length === 0) {
    lines.push('No case fails or errors on the raw SDK.', '');
    return lines;
  }
  lines.push(`Every case that fails or errors on the raw SDK, in spec order:`, '');
  lines.push(...failureTable(record.id, record.raw.failures, explanations, used), '');
  return lines;
}

/** The page's opening: what it is and the rules of the raw wrappers. */
function preamble(record: VerdictsRecord): string[] {
  return [
    '# What an adapter adds: the vendors\' own command APIs through the kit',
    '',
    '<!-- Generated by `npm run verdicts -w @sandstream/raw-sdk-verdicts` from packages/raw-sdk-verdicts/verdicts.json; do not edit. -->',
    '',
    "Each vendor's SDK already runs commands. This page shows what that gives a caller of the Sandstream",
    'contract when nothing is added: each SDK\'s own command API is put behind the contract as thinly as',
    `it can be, and the conformance kit (kit ${record.kitVersion}, spec ${record.specVersion}) runs on it against the same`,
    'backend the project\'s adapter for that vendor is proven on (an emulator of the vendor\'s service,',
    'or for Docker a real dockerd). The adapter runs beside it, the same way, as the control. What fails',
    'on the raw SDK and passes on the adapter is what the adapter adds.',
    '',
    '## The rules of a raw wrapper',
    '',
    '- Each call of the contract is the one SDK call that does that job, with the SDK\'s defaults; where',
    '  the SDK has none (Docker\'s Engine API has no call that signals an exec\'d process), the naive',
    '  stand-in its section names. The shared runtime (`defineSandbox` of `@sandstream/types/runtime`, a',
    '  `ProcessDriver` per command) gives the API its shape: queueing, timeouts, the grace period\'s',
    '  timers, results, `close()`.',
    '- The driver does nothing a user of the SDK would not write: no process-group kill, no tags, no',
    '  helper commands, no supervisor, no re-encoding fixes, no decoding of exit statuses, no retries, no',
    '  mapping of errors. The SDK\'s errors go to the runtime as they are (it reports them as',
    '  `TransportError`); its strings are encoded back to UTF-8, the only way from a string to bytes.',
    '- The manifest states what the vendor\'s adapter states, where the SDK has a call for it.',
    '- Both sides run the whole kit, nothing disabled, four cases at a time, on the backend and settings',
    '  of the adapter\'s own kit run.',
    '- `owner.crash` (spec 1.5, section 9.11) kills an owner process with SIGKILL: the one the kit starts loads',
    '  `src/owner.ts`, which makes its sandbox on the case\'s backend as that side\'s run makes one (the raw',
    '  wrapper or the adapter, with the same options), so each side is judged by what it does itself when',
    '  its owner dies.',
    `- "What the kit saw" is the case's message on one line, cut to ${MAX_SAW} characters and made the same from run`,
    '  to run: a pid with its command line becomes the process\'s role, any other pid `pid N`, numbers',
    '  of four digits or more and decimals (measured times, sizes of random data) become `N`, scratch',
    '  paths `<tmp>`, and the kit\'s generated text (from its first character outside printable ASCII) is',
    '  left out. "Why" is written by hand, per requirement family (or one requirement, or one case), in',
    '  `src/explanations.ts`.',
    '- A failure that depends on timing can come and go between runs; the record is the latest run.',
    '',
    'Regenerate the page, and its record `packages/raw-sdk-verdicts/verdicts.json`, with',
    '`npm run verdicts -w @sandstream/raw-sdk-verdicts` (it runs the kit twice per vendor, several',
    'minutes); `-- --vendor <id>` reruns one vendor and keeps the others\' records, and `-- --render`',
    'rewrites the page from the record alone. A test holds the page equal to its record.',
    '',
  ];
}

/**
 * The page. Throws {@link PageError} when the record and the vendors do not
 * match, when a failure has no explanation, or when an explanation explains
 * nothing in the record.
 */
export function renderPage(record: VerdictsRecord, vendors: readonly Vendor[], explanations: Explanations = EXPLANATIONS): string {
  const ids = record.vendors.map((v) => v.id).join(', ');
  const expected = vendors.map((v) => v.id).join(', ');
  if (ids !== expected) throw new PageError(`the record has the vendors ${ids || 'none'}, the page lists ${expected}: run npm run verdicts`);
  const lines = preamble(record);
  for (const [index, vendor] of vendors.entries()) {
    const used = new Set<string>();
    lines.push(...vendorSection(vendor, record.vendors[index]!, record.specVersion, explanations, used));
    const unused = Object.keys(explanations[vendor.id] ?? {}).filter((key) => !used.has(key) && !(BY_CHANCE[vendor.id] ?? []).includes(key));
    if (unused.length > 0) {
      throw new PageError(`${vendor.id}: EXPLANATIONS.${vendor.id} has entries no failing case uses (${unused.join(', ')}): remove them`);
    }
  }
  return `${lines.join('\n').trimEnd()}\n`;
}
