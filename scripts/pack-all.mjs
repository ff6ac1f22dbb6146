#!/usr/bin/env node
// Builds and packs every public package of the workspace (those without `"private": true`) into
// one folder, for installing them into a project before they are published. Prints each tarball,
// then, for each package, the one `npm install` command that installs it with the tarballs of its
// @sandstream dependencies: npm resolves a tarball's own dependencies on the registry, where
// these packages are not yet, unless the same command installs them too.
//
//   npm run pack:all [-- <folder>]            (default: <clone>/packs, which git ignores)
//   node scripts/pack-all.mjs [<folder>] [--no-build] [--json]
//
// --no-build packs what is built already; --json prints only a JSON object (name, version,
// tarball, install command of each package) for scripts.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: { 'no-build': { type: 'boolean', default: false }, json: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h', default: false } },
});
if (flags.help || positionals.length > 1) {
  process.stdout.write('Usage: npm run pack:all [-- <folder>]   (node scripts/pack-all.mjs [<folder>] [--no-build] [--json])\n');
  process.exit(flags.help ? 0 : 2);
}
const root = new URL('..', import.meta.url).pathname;
// npm runs a script in the package's root; INIT_CWD is where `npm run` was typed, which a relative folder is from.
const dest = resolve(process.env.INIT_CWD ?? process.cwd(), positionals[0] ?? join(root, 'packs'));
const log = (line) => (flags.json ? process.stderr : process.stdout).write(`${line}\n`);

const workspaces = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).workspaces;
const manifests = workspaces.map((dir) => ({ dir, ...JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) }));
const pub = manifests.filter((m) => m.private !== true);
const byName = new Map(pub.map((m) => [m.name, m]));
// npm pack's file name: the scope without its @, joined by a dash (@sandstream/mcp 0.1.0: sandstream-mcp-0.1.0.tgz).
const tarballName = (m) => `${m.name.replace(/^@/, '').replace('/', '-')}-${m.version}.tgz`;

/** A package and its @sandstream dependencies, transitively: what one install command needs. */
function closure(name, seen = new Set()) {
  if (seen.has(name)) return seen;
  const manifest = byName.get(name);
  if (manifest === undefined) throw new Error(`${name} is a dependency of a public package but is not public itself`);
  seen.add(name);
  for (const dep of Object.keys({ ...manifest.dependencies, ...manifest.optionalDependencies })) if (dep.startsWith('@sandstream/')) closure(dep, seen);
  return seen;
}

if (!flags['no-build']) {
  log(`building ${pub.length} public packages (turbo: what is built already is cached)`);
  execFileSync(join(root, 'node_modules/.bin/turbo'), ['run', 'build', '--output-logs=errors-only', ...pub.map((m) => `--filter=${m.name}`)], {
    cwd: root,
    stdio: ['ignore', flags.json ? 'ignore' : 'inherit', 'inherit'],
    env: { ...process.env, TURBO_TELEMETRY_DISABLED: '1', DO_NOT_TRACK: '1' },
  });
}
for (const m of pub) {
  if (!existsSync(join(root, m.dir, 'dist'))) throw new Error(`${m.name} is not built (${m.dir}/dist is missing): run without --no-build`);
}

mkdirSync(dest, { recursive: true });
// An older version's tarball beside the new one would match the same `sandstream-<name>-*.tgz`.
for (const file of readdirSync(dest)) {
  const stale = pub.some((m) => {
    const prefix = `${m.name.replace(/^@/, '').replace('/', '-')}-`;
    return file.startsWith(prefix) && /^\d/.test(file.slice(prefix.length)) && file.endsWith('.tgz');
  });
  if (stale) rmSync(join(dest, file));
}

const packed = JSON.parse(
  execFileSync('npm', ['pack', '--json', '--pack-destination', dest, ...pub.flatMap((m) => ['-w', m.name])], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 * 1024 * 1024,
  }),
);
const files = new Map(packed.map((p) => [p.name, join(dest, p.filename)]));
for (const m of pub) if (files.get(m.name) !== join(dest, tarballName(m))) throw new Error(`npm pack made ${files.get(m.name)} for ${m.name}, expected ${tarballName(m)}`);

const packages = pub.map((m) => {
  const names = [...closure(m.name)];
  return { name: m.name, version: m.version, tarball: files.get(m.name), dependencies: names.slice(1), install: `npm install ${names.map((n) => files.get(n)).join(' ')}` };
});
if (flags.json) {
  process.stdout.write(`${JSON.stringify({ folder: dest, packages }, null, 2)}\n`);
} else {
  log(`\n${packages.length} tarballs in ${dest}:`);
  for (const p of packages) log(`  ${p.tarball}`);
  log('\nTo install one into your project, with the @sandstream packages it depends on (run it in the project):');
  for (const p of packages) log(`\n# ${p.name}${p.dependencies.length > 0 ? ` (with ${p.dependencies.join(', ')})` : ''}\n${p.install}`);
}
