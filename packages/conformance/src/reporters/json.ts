import type { ConformanceReport } from '@sandstream/types';

/** The report as JSON, exactly the spec's ConformanceReport shape. */
export function formatJson(report: ConformanceReport): string {
  return `${JSON.stringify(report, null, 2)}\n`;
}
