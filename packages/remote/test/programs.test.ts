// The in-sandbox programs as embedded: equal to what src/sh/ generates, and read by every shell.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { unless } from '@sandstream/test-support/skips';
// A plain ES module, the generator itself (npm run generate).
import { GENERATED, PROGRAMS, embedLines, renderPrograms } from '../scripts/embed-sh.mjs';
import * as generated from '../src/generated/programs.js';
import { BACKGROUND, FOLLOWER, FORWARDED_SIGNALS, HELPER, RECORDS, STDIN_PROBE, SUPERVISOR, SUPERVISOR_NAME, TAG_VARIABLE } from '../src/index.js';
import { CHANNEL } from '../src/helper-channel.js';
import { TESTED_SHELLS, missing } from './harness.js';


const REGENERATE = 'npm run generate -w @sandstream/remote';

/** Each exported program, by the generated constant it comes from. */
const EXPORTED: Record<string, string> = {
  SUPERVISOR_SH: SUPERVISOR,
  HELPER_SH: HELPER,
  CHANNEL_SH: CHANNEL,
  BACKGROUND_SH: BACKGROUND,
  FOLLOWER_SH: FOLLOWER,
  RECORDS_SH: RECORDS,
  STDIN_PROBE_SH: STDIN_PROBE,
};

describe('src/generated/programs.ts', () => {
  it('is exactly what src/sh/ generates', () => {
    expect(readFileSync(GENERATED, 'utf8'), `stale; run ${REGENERATE}`).toBe(renderPrograms());
  });

  it('is where every exported program comes from, and exports nothing else', () => {
    expect(Object.keys(generated).sort()).toEqual(PROGRAMS.map(([name]) => name).sort());
    for (const [name, value] of Object.entries(generated)) expect(EXPORTED[name], name).toBe(value);
  });

  it('embeds no comment, blank line or indentation', () => {
    for (const [name, file] of PROGRAMS) {
      for (const line of embedLines(file)) expect(line, `${name}: ${line}`).toMatch(/^[^\s#](.*\S)?$/);
    }
  });

  // The supervisor travels in argv with every command: it may not grow past its size as strings in
  // TypeScript (5637 characters) for want of a few names. 6600 since it reads an exact status
  // under gVisor too, whose /proc has no zombie's wait status, and finds there the session of a
  // command that ended before it was found (ADR-0035, 2026-12-06). 8000 since it runs a command
  // on a terminal too, through a holder with job control (ADR-0052), a program of its own in a string.
  // 8200 since it sets the terminal's size itself (stty), for a backend that sizes it late.
  it('keeps the supervisor within its argv budget', () => {
    expect(SUPERVISOR.length).toBeLessThanOrEqual(8200);
  });

  it('holds the names the TypeScript side states', () => {
    expect(SUPERVISOR).toContain(`for s in ${FORWARDED_SIGNALS.join(' ')}; do`);
    for (const program of [SUPERVISOR, HELPER]) expect(program).toContain(`"^${TAG_VARIABLE}=$1"`);
    expect(SUPERVISOR).toContain(`export ${TAG_VARIABLE}=`);
    expect(HELPER).toContain(`grep -qzx ${SUPERVISOR_NAME} `);
    // The channel runs the helper itself, whole.
    expect(CHANNEL).toContain(`\n${HELPER}\n`);
  });

  it('traps the forwarded signals before it forks the command, which may report its start at once', () => {
    // Untrapped, a SIGTERM the driver sends once it reads the start would end the supervisor and
    // leave the command and its holder running on (found by adapter-vercel's option fuzz).
    const traps = SUPERVISOR.indexOf(`for s in ${FORWARDED_SIGNALS.join(' ')}; do`);
    const forks = SUPERVISOR.indexOf('} | wake &');
    expect(traps).toBeGreaterThan(0);
    expect(forks).toBeGreaterThan(traps);
  });
});

describe.each(TESTED_SHELLS)('the programs under $name', (shell) => {
  unless(it, missing(shell)).each(PROGRAMS.map(([name]) => [name] as const))('parses %s (sh -n)', (name) => {
    const checked = spawnSync(shell.path as string, ['-n', '-c', EXPORTED[name] as string], { encoding: 'utf8' });
    expect(checked.stderr).toBe('');
    expect(checked.status).toBe(0);
  });
});
