#!/usr/bin/env node
// API reports of the published packages, one per export of each package's
// `exports` map that has types: packages/<pkg>/api/<pkg>[-<subpath>].api.md.
//
//   node api-extractor/reports.mjs [<package dir>...]           check: fails when the public API changed
//   node api-extractor/reports.mjs --update [<package dir>...]  regenerate the committed reports
//
// With no directories, every published package. Run after `npm run build`:
// the reports are read from the built declarations in dist/.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Extractor, ExtractorConfig } from '@microsoft/api-extractor';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
export const PUBLISHED = ['packages/types', 'packages/conformance', 'packages/adapter-local', 'packages/remote', 'packages/adapter-e2b', 'packages/adapter-vercel', 'packages/adapter-docker', 'packages/mcp', 'packages/ai-sdk', 'packages/host-limits'];

const args = process.argv.slice(2);
const update = args.includes('--update');
const dirs = args.filter((arg) => arg !== '--update').map((dir) => resolve(dir));

/** `./runtime` of `@sandstream/types` becomes `types-runtime`; `.` becomes `types`. */
function reportName(pkgName, subpath) {
  const base = pkgName.replace(/^@[^/]+\//, '');
  return subpath === '.' ? base : `${base}-${subpath.slice(2).replaceAll('/', '-')}`;
}

/** The exports that carry declarations: [subpath, absolute .d.ts path]. */
function entryPoints(dir, pkg) {
  const entries = [];
  for (const [subpath, target] of Object.entries(pkg.exports ?? {})) {
    const types = typeof target === 'object' && target !== null ? target.types : undefined;
    if (typeof types === 'string') entries.push([subpath, join(dir, types)]);
  }
  return entries;
}

const MESSAGES = {
  compilerMessageReporting: { default: { logLevel: 'warning' } },
  extractorMessageReporting: {
    default: { logLevel: 'warning' },
    // The packages do not use release tags (@public, @beta): everything exported is public.
    'ae-missing-release-tag': { logLevel: 'none' },
    // Reported in the API report itself, where a reviewer sees them; not worth a console line each.
    'ae-forgotten-export': { logLevel: 'none', addToApiReportFile: true },
    'ae-undocumented': { logLevel: 'none' },
    'ae-unresolved-link': { logLevel: 'none' },
  },
  tsdocMessageReporting: { default: { logLevel: 'none' } },
};

function run(dir) {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const apiFolder = join(dir, 'api');
  if (update) mkdirSync(apiFolder, { recursive: true });
  const temp = mkdtempSync(join(tmpdir(), 'api-report-'));
  const expected = new Set();
  let failed = false;
  try {
    for (const [subpath, dts] of entryPoints(dir, pkg)) {
      const name = reportName(pkg.name, subpath);
      expected.add(`${name}.api.md`);
      if (!existsSync(dts)) {
        console.error(`${pkg.name} ${subpath}: ${dts} is missing; build the package first`);
        failed = true;
        continue;
      }
      const config = ExtractorConfig.prepare({
        configObject: {
          projectFolder: dir,
          mainEntryPointFilePath: dts,
          compiler: {
            overrideTsconfig: {
              compilerOptions: {
                target: 'ES2022',
                lib: ['ES2022', 'ESNext.Disposable'],
                module: 'NodeNext',
                moduleResolution: 'NodeNext',
                types: ['node'],
                strict: true,
                skipLibCheck: true,
              },
              files: [dts],
            },
          },
          apiReport: { enabled: true, reportFileName: name, reportFolder: apiFolder, reportTempFolder: temp },
          docModel: { enabled: false },
          dtsRollup: { enabled: false },
          tsdocMetadata: { enabled: false },
          messages: MESSAGES,
          newlineKind: 'lf',
        },
        configObjectFullPath: join(dir, 'api-extractor.json'),
        packageJsonFullPath: join(dir, 'package.json'),
      });
      const result = Extractor.invoke(config, { localBuild: update, showVerboseMessages: false });
      if (result.errorCount > 0) {
        console.error(`${pkg.name} ${subpath}: api-extractor reported ${result.errorCount} error(s)`);
        failed = true;
      } else if (result.apiReportChanged && !update) {
        console.error(
          `${pkg.name} ${subpath}: the public API differs from api/${name}.api.md.\n` +
            '  If the change is intended, run `node api-extractor/reports.mjs --update` and commit the report.',
        );
        failed = true;
      }
    }
    // A report whose export is gone is stale.
    for (const file of existsSync(apiFolder) ? readdirSync(apiFolder) : []) {
      if (!file.endsWith('.api.md') || expected.has(file)) continue;
      if (update) {
        rmSync(join(apiFolder, file));
      } else {
        console.error(`${pkg.name}: api/${file} reports an export the package no longer has`);
        failed = true;
      }
    }
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
  return !failed;
}

const targets = dirs.length > 0 ? dirs : PUBLISHED.map((dir) => join(ROOT, dir));
let ok = true;
for (const dir of targets) {
  if (!run(dir)) ok = false;
  else console.log(`${basename(dir)}: API report ${update ? 'written' : 'unchanged'}`);
}
process.exitCode = ok ? 0 : 1;
