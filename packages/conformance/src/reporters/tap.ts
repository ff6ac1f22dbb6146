import type { ConformanceReport } from '@sandstream/types';
import { tolerated } from './blocking.js';
import { counted } from './words.js';

/** TAP version 14: skipped and disabled cases are SKIP; expected and advisory failures are TODO. */
export function formatTap(report: ConformanceReport): string {
  const out = ['TAP version 14', `1..${report.cases.length}`];
  report.cases.forEach((c, index) => {
    const n = index + 1;
    const name = `${c.id} - ${c.title}`.replace(/#/g, '\\#');
    const why = (c.message ?? '').replace(/\n/g, ' ');
    switch (c.status) {
      case 'pass':
        out.push(`ok ${n} ${name}`);
        break;
      case 'skipped':
      case 'disabled':
        out.push(`ok ${n} ${name} # SKIP ${c.status}: ${why}`);
        break;
      default:
        const todo = tolerated(c);
        out.push(todo === undefined ? `not ok ${n} ${name}` : `not ok ${n} ${name} # TODO ${todo}`);
        out.push('  ---', `  status: ${c.status}`, `  message: ${JSON.stringify(why)}`, `  requirements: [${c.requirements.join(', ')}]`, '  ...');
    }
  });
  out.push(`# ${report.ok ? 'conforms' : 'does not conform'}: ${report.summary.pass} passed, ${report.summary.fail} failed, ${report.summary.skipped} skipped, ${report.summary.disabled} disabled, ${counted(report.summary.error, 'error')}`, '');
  return out.join('\n');
}
