/**
 * The spec section each group of cases belongs to: a case id's first segment
 * (`teardown` in `teardown.break`) names the group, and this table names the
 * group's section of spec.md by its heading, number and title as written
 * there. The JUnit reporter's `classname` is the group. `test/sections.test.ts`
 * checks that every case's group is listed here and every heading is one of
 * spec.md's.
 */
export const CASE_GROUP_SECTIONS: Readonly<Record<string, string>> = Object.freeze({
  stream: '6. stream() and the Process',
  start: '6.1 Start',
  process: '2.2 Process',
  capabilities: '4. Capabilities',
  arguments: '3. Arguments and options',
  environment: '3.3 Environment and working directory',
  teardown: '9. Teardown',
  termination: '9.8 The termination sequence',
  ordering: '7. Ordering',
  bytes: '8. Bytes',
  wait: '6.3 wait()',
  flow: '6.2 Iteration',
  result: '10. ExecResult and exit status',
  'output-cap': '5. run()',
  stdin: '6.4 Standard input',
  concurrency: '11. Concurrency',
  limits: '12.1 Resource limits',
  user: '12.2 User',
  background: '13.1 Background commands',
  attach: '13.2 Attach',
});

/** The group of a case: the first segment of its id. */
export function caseGroup(id: string): string {
  return id.split('.')[0] ?? id;
}
