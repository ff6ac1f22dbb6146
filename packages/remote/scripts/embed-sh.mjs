// Embeds the in-sandbox programs of src/sh/ into src/generated/programs.ts.
//
// Each program is a POSIX sh file of src/sh/ that shellcheck checks (`npm run lint`). A line
// `. ./lib/NAME.sh` (or `. ./NAME.sh`) sources a shared piece, which this script splices in where
// the line stands, recursively, so the pieces the programs repeat (the tool finder, the stat
// line's fields, the tag sweep) are written once. The embedded text leaves out comment lines,
// blank lines and indentation: the programs travel in argv (`sh -c PROGRAM ...`), the supervisor
// with every command. A program must not hold a here-document or a quoted string over two lines,
// whose blanks the embed would change.
//
// `--check` changes nothing and exits 1 when the committed module is out of date;
// test/programs.test.ts holds the same, regenerating in memory.
//
//   npm run generate -w @sandstream/remote [-- --check]
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const SH_DIR = new URL('../src/sh/', import.meta.url);
export const GENERATED = new URL('../src/generated/programs.ts', import.meta.url);

/** Each program: its constant's name, its file under src/sh/, and what it is. */
export const PROGRAMS = [
  ['SUPERVISOR_SH', 'supervisor.sh', 'The supervisor (see supervisor.ts).'],
  ['HELPER_SH', 'helper.sh', 'The helper commands (see helpers.ts).'],
  ['CHANNEL_SH', 'channel.sh', 'The helper channel (see helper-channel.ts).'],
  ['BACKGROUND_SH', 'background.sh', "A background command's start (see background.ts)."],
  ['FOLLOWER_SH', 'follower.sh', "A background record's follower (see background.ts)."],
  ['RECORDS_SH', 'records.sh', 'The listing and removal of background records (see background.ts).'],
  ['STDIN_PROBE_SH', 'stdin-probe.sh', "Whether a command's standard input is still held (see stdin-probe.ts)."],
];

const SOURCE = /^\s*\.\s+\.\/([\w/-]+\.sh)\s*$/;

/** The lines of a program's file as embedded: its sourced pieces spliced in, without comments, blank lines or indentation. */
export function embedLines(file, from = [file]) {
  const out = [];
  for (const raw of readFileSync(new URL(file, SH_DIR), 'utf8').split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const sourced = SOURCE.exec(line);
    if (sourced === null) {
      out.push(line);
      continue;
    }
    const piece = sourced[1];
    if (from.includes(piece)) throw new Error(`src/sh/${file} sources ${piece} in a cycle (${from.join(' -> ')})`);
    out.push(...embedLines(piece, [...from, piece]));
  }
  return out;
}

/** A line as a single-quoted TypeScript string. */
function quote(line) {
  return `'${line.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** The text of src/generated/programs.ts. */
export function renderPrograms() {
  const constants = PROGRAMS.map(([name, file, what]) => {
    const lines = embedLines(file).map((line) => `  ${quote(line)},`);
    return `/** ${what} From src/sh/${file}. */\nexport const ${name}: string = [\n${lines.join('\n')}\n].join('\\n');\n`;
  });
  return `// Generated from src/sh/*.sh by scripts/embed-sh.mjs; do not edit.
// Each program is its .sh file with the pieces it sources spliced in, without comment lines,
// blank lines or indentation (the programs travel in argv). test/programs.test.ts holds this
// file equal to what the sources generate.
// Refresh with: npm run generate -w @sandstream/remote

${constants.join('\n')}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = renderPrograms();
  const current = (() => {
    try {
      return readFileSync(GENERATED, 'utf8');
    } catch {
      return undefined;
    }
  })();
  if (process.argv.includes('--check')) {
    if (current !== text) {
      process.stderr.write('packages/remote/src/generated/programs.ts is out of date with src/sh/\nRun: npm run generate -w @sandstream/remote\n');
      process.exit(1);
    }
  } else if (current !== text) {
    writeFileSync(GENERATED, text);
    process.stdout.write('updated packages/remote/src/generated/programs.ts\n');
  }
}
