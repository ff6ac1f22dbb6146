import type { ConformanceReport } from '@sandstream/types';
import { tolerated } from './blocking.js';
import { caseGroup, caseSection, sectionName } from '../sections.js';

function xml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    // XML 1.0 cannot carry most control characters, even escaped.
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * The JUnit classname of a case: its spec section as spec.md's heading reads
 * (`9.8 The termination sequence`), so CI groups the cases as the spec does;
 * the first segment of its id for a case whose first requirement this kit's
 * spec revision does not know.
 */
function classname(c: { readonly id: string; readonly requirements: readonly string[] }): string {
  const section = caseSection(c);
  return section === undefined ? caseGroup(c.id) : sectionName(section);
}

/**
 * JUnit XML for CI systems: one testcase per case; its classname is the case's
 * spec section (`sections.ts`).
 */
export function formatJunit(report: ConformanceReport): string {
  const s = report.summary;
  const failures = report.cases.filter((c) => c.status === 'fail' && tolerated(c) === undefined).length;
  const skipped = report.cases.filter((c) => c.status === 'skipped' || c.status === 'disabled' || tolerated(c) !== undefined).length;
  const seconds = (ms: number): string => (ms / 1000).toFixed(3);
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="sandstream-conformance" tests="${report.cases.length}" failures="${failures}" errors="${s.error}" skipped="${skipped}" time="${seconds(report.durationMs)}">`,
    `  <testsuite name="${xml(`Sandstream ${report.specVersion} conformance: ${report.adapter.name}`)}" tests="${report.cases.length}" failures="${failures}" errors="${s.error}" skipped="${skipped}" time="${seconds(report.durationMs)}" timestamp="${report.startedAt}">`,
    '    <properties>',
    `      <property name="specVersion" value="${xml(report.specVersion)}"/>`,
    `      <property name="kitVersion" value="${xml(report.kitVersion)}"/>`,
    ...Object.entries(report.adapter.capabilities).map(
      ([name, on]) => `      <property name="capability.${xml(name)}" value="${String(on)}"/>`,
    ),
    '    </properties>',
  ];
  for (const c of report.cases) {
    const open = `    <testcase classname="${xml(classname(c))}" name="${xml(`${c.id}: ${c.title} [${c.requirements.join(', ')}]`)}" time="${seconds(c.durationMs)}"`;
    const message = xml(c.message ?? '');
    switch (c.status) {
      case 'pass':
        lines.push(`${open}/>`);
        break;
      case 'fail':
        lines.push(`${open}>`, tolerated(c) !== undefined ? `      <skipped message="${tolerated(c)}: ${message}"/>` : `      <failure message="${message}"/>`, '    </testcase>');
        break;
      case 'error':
        lines.push(`${open}>`, `      <error message="${message}"/>`, '    </testcase>');
        break;
      default:
        lines.push(`${open}>`, `      <skipped message="${xml(c.status)}: ${message}"/>`, '    </testcase>');
    }
  }
  lines.push('  </testsuite>', '</testsuites>', '');
  return lines.join('\n');
}
