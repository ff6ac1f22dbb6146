#!/usr/bin/env node
// The first hour of a new user, as the READMEs tell it, checked on a fresh clone:
//
// 1. The Quickstart (`npm ci && npm run conformance`), and after it the kit's documented command,
//    `npx sandstream-conformance <adapter-module>`. Right after `npm ci` the command must already
//    be this workspace's (it says to build first), never a lookup on the registry.
// 2. "Installing before publication": pack every public package with the pack script (`npm run
//    pack:all`), check the README's table of what each needs beside it, install @sandstream/mcp
//    into an empty project with the README's one command (it must bring its @sandstream
//    dependencies), then the README's other commands; run the MCP server from the installed
//    package and from the clone, with the configs of the root README and of packages/mcp's "From
//    a clone" as written, through the MCP SDK's client (list the tools, `echo hi` through the exec
//    tool); compile the README examples there with the README's tsconfig.json as written (the
//    MCP README's too), run each of the others, and run the kit from the installed tarball.
//
// It clones the committed HEAD of this repository (or --ref <revision>), so it checks what a
// clone gets, not the working tree. It needs the npm registry or a warm npm cache for the
// third-party dependencies. The last step of `npm test`, after every package's tests (so CI,
// which runs `npm test`, runs it too); alone: `npm run test:clone`.
//
//   node scripts/fresh-clone.mjs [--ref <revision>] [--keep]
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values: flags } = parseArgs({ options: { ref: { type: 'string' }, keep: { type: 'boolean', default: false } } });
const repo = new URL('..', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'sandstream-clone-'));
const clone = join(work, 'sandstream');
const packs = join(clone, 'packs');
const project = join(work, 'my-project');
const started = Date.now();
// npm takes third-party packages from its cache when it can, and never runs the bin of a
// package it would have to download.
const env = { ...process.env, npm_config_prefer_offline: 'true', npm_config_fund: 'false', npm_config_audit: 'false', TURBO_TELEMETRY_DISABLED: '1', DO_NOT_TRACK: '1' };
delete env.npm_config_offline;

function step(title) {
  process.stdout.write(`\n[${((Date.now() - started) / 1000).toFixed(0)} s] ${title}\n`);
}

/** Runs a command line in bash; returns its status and output (printed when it fails). */
function sh(line, cwd, { expectStatus = 0 } = {}) {
  process.stdout.write(`$ ${line}\n`);
  const result = spawnSync('bash', ['-c', line], { cwd, env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const output = `${result.stdout}${result.stderr}`;
  if (result.status !== expectStatus) {
    process.stdout.write(output);
    assert.fail(`\`${line}\` exited with ${result.status ?? result.signal}, expected ${expectStatus}`);
  }
  return output;
}

/** The fenced blocks of a markdown text in a language, in order. */
function blocks(markdown, language) {
  return [...markdown.matchAll(new RegExp('```' + language + '\\n([\\s\\S]*?)```', 'g'))].map((match) => match[1]);
}

/** The text of a markdown section: from its heading to the next heading of the same level. */
function section(markdown, heading) {
  const start = markdown.indexOf(`\n${heading}\n`);
  assert.ok(start >= 0, `no section "${heading}"`);
  const level = heading.split(' ')[0];
  const end = markdown.indexOf(`\n${level} `, start + heading.length + 2);
  return markdown.slice(start, end < 0 ? undefined : end);
}

try {
  step(`clone ${flags.ref ?? 'HEAD'} of ${repo} into ${clone}`);
  execFileSync('git', ['clone', '--quiet', '--no-hardlinks', repo, clone], { stdio: 'inherit' });
  if (flags.ref !== undefined) execFileSync('git', ['-C', clone, 'checkout', '--quiet', flags.ref], { stdio: 'inherit' });
  const readme = readFileSync(join(clone, 'README.md'), 'utf8');

  step('Quickstart, first command: npm ci');
  const quickstart = blocks(section(readme, '## Quickstart'), 'sh')[0];
  assert.match(quickstart, /^npm ci && npm run conformance\b/m, 'the Quickstart is no longer `npm ci && npm run conformance`');
  sh('npm ci', clone);
  // `--no-install`: a name npm did not link goes to no registry (where anyone's package of that name would run).
  const early = sh('npx --no-install sandstream-conformance --version', clone, { expectStatus: 2 });
  assert.match(early, /the kit is not built \(dist\/cli\.js is missing\)/);
  assert.match(early, /run `npm run build`/);

  step('Quickstart, second command: npm run conformance');
  assert.match(sh('npm run conformance', clone), /CONFORMS to Sandstream \d+\.\d+/);

  step('the kit command the README documents after the Quickstart');
  const documented = /`(npx sandstream-conformance examples\/[^`]+)`/.exec(section(readme, '## Quickstart'))?.[1];
  assert.ok(documented, 'the Quickstart names no `npx sandstream-conformance examples/...` command');
  const kit = sh(documented.replace(/^npx /, 'npx --no-install '), clone);
  const version = JSON.parse(readFileSync(join(clone, 'packages/conformance/package.json'), 'utf8')).version;
  assert.match(kit, new RegExp(`Sandstream \\d+\\.\\d+ conformance \\(kit ${version.replaceAll('.', '\\.')}\\)`));
  assert.match(kit, /CONFORMS to Sandstream/);

  step('Installing before publication: the pack script, in the clone');
  const prepublication = section(readme, '## Installing before publication');
  const install = blocks(prepublication, 'sh')[0].trim().split('\n');
  assert.match(install[0], /^git clone \S+ ~\/sandstream && cd ~\/sandstream$/, 'the first line clones the repository into ~/sandstream');
  assert.equal(install[1], 'npm ci && npm run pack:all', 'the second line installs and packs (the Quickstart ran npm ci)');
  // The README's paths, here: the clone is ~/sandstream, the empty project ~/my-project.
  const local = (text) => text.replaceAll('~/sandstream', clone).replaceAll('/path/to/sandstream', clone).replaceAll('~/my-project', project).replaceAll('/path/to/my-project', project);
  const packOutput = sh('npm run pack:all', clone);
  const manifests = JSON.parse(readFileSync(join(clone, 'package.json'), 'utf8')).workspaces.map((dir) => JSON.parse(readFileSync(join(clone, dir, 'package.json'), 'utf8')));
  const publicPackages = manifests.filter((m) => m.private !== true);
  const tarball = (m) => `${m.name.slice(1).replace('/', '-')}-${m.version}.tgz`;
  assert.deepEqual(readdirSync(packs).sort(), publicPackages.map(tarball).sort(), 'packs/ holds a tarball of each public package, and nothing else');
  for (const m of publicPackages) assert.ok(packOutput.includes(join(packs, tarball(m))), `npm run pack:all printed no ${tarball(m)}`);
  // The README's table: each public package and the @sandstream packages its install needs beside it.
  const needs = (name, seen = new Set()) => {
    const m = manifests.find((p) => p.name === name);
    for (const dep of Object.keys(m.dependencies ?? {})) if (dep.startsWith('@sandstream/') && !seen.has(dep)) needs(dep, seen.add(dep));
    return seen;
  };
  const table = new Map([...prepublication.matchAll(/^\| `(@sandstream\/[^`]+)` \| ([^|]*) \|$/gm)].map((row) => [row[1], row[2].trim() === 'none' ? [] : [...row[2].matchAll(/`([^`]+)`/g)].map((n) => `@sandstream/${n[1]}`).sort()]));
  assert.deepEqual(new Map([...table].sort()), new Map(publicPackages.map((m) => [m.name, [...needs(m.name)].sort()]).sort()), "the README's table of what each package needs beside it");

  step('Installing before publication: the MCP server in one command, into an empty project');
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), `${JSON.stringify({ name: 'my-project', private: true, type: 'module' }, null, 2)}\n`);
  // First, into the empty project: the one command must bring @sandstream/mcp's own dependencies.
  const mcpInstall = blocks(prepublication, 'sh')[1].trim();
  assert.match(mcpInstall, /^npm install \S*sandstream-mcp-\*\.tgz( \S+)*$/, 'the MCP server is one `npm install` line');
  sh(local(mcpInstall), project);
  const mcpOnly = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')).dependencies ?? {};
  assert.deepEqual(Object.keys(mcpOnly).sort(), ['@sandstream/adapter-local', '@sandstream/mcp', '@sandstream/types']);
  for (const spec of Object.values(mcpOnly)) assert.match(spec, /^file:.*\.tgz$/);
  assert.deepEqual(readdirSync(join(project, 'node_modules/@sandstream')).sort(), ['adapter-local', 'mcp', 'types']);

  step('Installing before publication: the README\'s commands, in that project');
  let cwd = clone;
  for (const line of install.slice(2)) {
    const cd = /^cd (\S+)$/.exec(local(line));
    if (cd) cwd = cd[1];
    else sh(local(line), cwd);
  }
  const installed = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8'));
  for (const name of ['@sandstream/types', '@sandstream/adapter-local', '@sandstream/mcp']) assert.match(installed.dependencies?.[name] ?? '', /^file:.*\.tgz$/, name);
  assert.match(installed.devDependencies?.['@sandstream/conformance'] ?? '', /^file:.*\.tgz$/);
  const packed = (name) => readFileSync(join(project, 'node_modules', name, 'README.md'), 'utf8');

  step('the MCP server through the MCP SDK client: the installed package, and the clone, with the READMEs\' configs as written');
  // Each config starts its own server; the client lists the tools and runs `echo hi` through the
  // one whose name ends in exec (the names carry a prefix, sandbox_ by default).
  const mcpReadme = section(readFileSync(join(clone, 'packages/mcp/README.md'), 'utf8'), '## From a clone');
  const fromClone = blocks(mcpReadme, 'sh')[0].trim().split('\n');
  assert.match(fromClone[0], /^git clone \S+ ~\/sandstream && cd ~\/sandstream$/);
  assert.equal(fromClone[1], 'npm ci && npm run build', 'From a clone: install and build (the Quickstart ran both: npm run conformance builds every package)');
  const server = (markdown) => {
    const { mcpServers } = JSON.parse(local(blocks(markdown, 'json').find((b) => b.includes('"mcpServers"'))));
    return Object.values(mcpServers)[0];
  };
  const claude = /`claude mcp add \S+ -- ([^`]+)`/.exec(mcpReadme)?.[1];
  assert.ok(claude, 'From a clone names no `claude mcp add` command');
  const [claudeCommand, ...claudeArgs] = local(claude).split(' ');
  const configs = [
    ['root README, the installed package', server(prepublication)],
    ['packages/mcp README, From a clone', server(mcpReadme)],
    ['packages/mcp README, From a clone, claude mcp add', { command: claudeCommand, args: claudeArgs }],
  ];
  assert.ok(configs[0][1].args[0].startsWith(join(project, 'node_modules/@sandstream/mcp/')), 'the root README runs the installed package');
  assert.ok(configs[1][1].args[0].startsWith(join(clone, 'packages/mcp/')), 'From a clone runs the clone');
  writeFileSync(
    join(project, 'mcp-check.mjs'),
    `import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
for (const [title, { command, args }] of ${JSON.stringify(configs)}) {
  const client = new Client({ name: 'fresh-clone', version: '0.0.0' });
  await client.connect(new StdioClientTransport({ command, args, stderr: 'inherit' }));
  try {
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    const exec = names.find((name) => /exec$/.test(name));
    assert.ok(exec, \`\${title}: no exec tool among \${names.join(', ')}\`);
    const result = await client.callTool({ name: exec, arguments: { command: 'echo hi' } });
    assert.notEqual(result.isError, true, JSON.stringify(result));
    assert.equal(result.structuredContent?.exitCode, 0, JSON.stringify(result));
    assert.match(result.content[0].text, /^hi$/m, JSON.stringify(result));
    const { name, version } = client.getServerVersion();
    console.log(\`ok \${title}: \${name} \${version}, tools \${names.join(', ')}; \${exec} echo hi: \${JSON.stringify(result.content[0].text)}\`);
  } finally {
    await client.close();
  }
}
`,
  );
  process.stdout.write(sh('node mcp-check.mjs', project));

  step('the README examples, compiled as the README says for Node 20, and run');
  const sources = new Map([
    ['root', readme],
    ['types', packed('@sandstream/types')],
    ['adapter-local', packed('@sandstream/adapter-local')],
    ['conformance', packed('@sandstream/conformance')],
  ]);
  // A self-contained example: it imports only installed packages and exports what it defines.
  const complete = (code) => /^export /m.test(code) && /^import .* from '@sandstream\//m.test(code) && !/^import .* from '\./m.test(code);
  const modules = [];
  mkdirSync(join(project, 'src'));
  for (const [name, markdown] of sources) {
    blocks(markdown, 'ts').forEach((code, index) => {
      if (!complete(code)) return;
      const file = `${name}-${index + 1}`;
      writeFileSync(join(project, 'src', `${file}.ts`), code);
      modules.push({ file, path: `./dist/${file}.js` });
    });
    blocks(markdown, 'js').forEach((code, index) => {
      const file = `${name}-${index + 1}-plain`;
      writeFileSync(join(project, `${file}.mjs`), code);
      modules.push({ file, path: `./${file}.mjs` });
    });
  }
  const expectedModules = ['root-1', 'root-1-plain', 'types-1', 'types-2', 'types-3', 'adapter-local-1', 'adapter-local-1-plain', 'adapter-local-2', 'adapter-local-3', 'adapter-local-4', 'adapter-local-5'];
  assert.deepEqual(modules.map((m) => m.file).sort(), expectedModules.sort(), 'the README examples this check runs');
  // The MCP README's examples are compiled, not run (a stdio server among them waits for its input).
  const mcpExamples = blocks(packed('@sandstream/mcp'), 'ts').filter((code) => /^import .* from '@sandstream\/mcp'/m.test(code) && !/^import .* from '\./m.test(code));
  assert.ok(mcpExamples.length > 0, 'the MCP README has no example that imports @sandstream/mcp');
  mcpExamples.forEach((code, index) => writeFileSync(join(project, 'src', `mcp-${index + 1}.ts`), code));
  // The README's tsconfig.json, as written.
  const tsconfigText = blocks(prepublication, 'json').find((b) => b.includes('"compilerOptions"'));
  assert.ok(tsconfigText, 'Installing before publication gives no tsconfig.json');
  const { compilerOptions } = JSON.parse(tsconfigText);
  assert.equal(compilerOptions.skipLibCheck, true);
  const readmeNote = section(readme, '## Using it');
  assert.ok(readmeNote.includes(`"target": "${compilerOptions.target}"`) && readmeNote.includes(`"lib": ${JSON.stringify(compilerOptions.lib).replaceAll(',', ', ')}`), 'Using it names the target and lib of the tsconfig.json');
  writeFileSync(join(project, 'tsconfig.json'), tsconfigText);
  const typescript = JSON.parse(readFileSync(join(repo, 'node_modules/typescript/package.json'), 'utf8')).version;
  const nodeTypes = JSON.parse(readFileSync(join(repo, 'node_modules/@types/node/package.json'), 'utf8')).version;
  sh(`npm install -D typescript@${typescript} @types/node@${nodeTypes}`, project);
  sh('npx --no-install tsc -p tsconfig.json', project);

  // Why skipLibCheck, cheaply (checking the declarations themselves takes 10 s): the MCP SDK's declarations name
  // HeadersInit, and with these settings nothing declares it.
  const sdk = join(project, 'node_modules/@modelcontextprotocol/sdk/dist/esm');
  const naming = readdirSync(sdk, { recursive: true }).filter((file) => file.endsWith('.d.ts') && /\bHeadersInit\b/.test(readFileSync(join(sdk, file), 'utf8')));
  assert.ok(naming.length > 0, "the MCP SDK's declarations no longer name HeadersInit: the README's reason for skipLibCheck is gone, update it");
  mkdirSync(join(project, 'noskip'));
  writeFileSync(join(project, 'noskip/headers.ts'), 'export type Headers = HeadersInit;\n');
  writeFileSync(join(project, 'noskip/tsconfig.json'), JSON.stringify({ extends: '../tsconfig.json', compilerOptions: { noEmit: true, rootDir: '.' }, files: ['headers.ts'], include: [] }));
  const undeclared = sh('npx --no-install tsc -p noskip/tsconfig.json', project, { expectStatus: 2 });
  assert.match(undeclared, /error TS2304: Cannot find name 'HeadersInit'/);
  process.stdout.write(`HeadersInit: named by the MCP SDK's ${naming.join(', ')}; declared by neither lib nor @types/node\n`);

  // What the README says fails: `target: esnext`, as `tsc --init` writes it, leaves `await using` to Node 20.
  writeFileSync(join(project, 'tsconfig.esnext.json'), JSON.stringify({ extends: './tsconfig.json', compilerOptions: { target: 'esnext', lib: ['esnext'], outDir: 'dist-esnext' }, files: ['src/adapter-local-1.ts'], include: [] }));
  sh('npx --no-install tsc -p tsconfig.esnext.json', project);
  const major = Number(process.versions.node.split('.')[0]);
  const esnext = spawnSync(process.execPath, ['dist-esnext/adapter-local-1.js'], { cwd: project, encoding: 'utf8' });
  if (major === 20) assert.match(esnext.stderr, /SyntaxError: Unexpected identifier 'sb'/, 'Node 20 ran `await using` as compiled for esnext');
  else process.stdout.write(`(Node ${process.versions.node} parses \`await using\` or not on its own; the esnext failure is checked on Node 20 only)\n`);

  // A directory with a git commit and an `npm test`, which the examples run in.
  const checkout = join(work, 'checkout');
  mkdirSync(checkout);
  writeFileSync(join(checkout, 'package.json'), JSON.stringify({ name: 'checkout', private: true, scripts: { test: 'echo tests passed' } }));
  execFileSync('git', ['init', '--quiet', checkout]);
  execFileSync('git', ['-C', checkout, '-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '--quiet', '--allow-empty', '-m', 'first subject']);

  // Each exported function of each example, called with real arguments, and what it must answer.
  writeFileSync(
    join(project, 'run-examples.mjs'),
    `import assert from 'node:assert/strict';
import { createLocalSandbox } from '@sandstream/adapter-local';
import { createExecResult } from '@sandstream/types';
const checkout = ${JSON.stringify(checkout)};
const calls = {
  'root-1': { buildAndTest: async (f) => assert.equal(await f(), 0) },
  'root-1-plain': {},
  'types-1': { runTests: async (f) => { const sb = createLocalSandbox({ cwd: checkout }); try { assert.equal(await f(sb), true); } finally { await sb.close(); } } },
  'types-2': {
    roundTrip: async (f) => {
      const result = createExecResult({ exitCode: 0, signal: null, stdout: new Uint8Array([104, 105]), stderr: new Uint8Array(), stdoutTruncated: false, stderrTruncated: false, timedOut: false, streamed: false, durationMs: 1 });
      assert.equal(f(result).stdoutText, 'hi');
    },
    manifestProblems: async (f) => {
      assert.deepEqual(f({ streaming: true, stdin: true, 'resource-limits': false, user: false }), []);
      assert.ok(f({ streaming: 'yes' }).length > 0);
    },
  },
  'types-3': { createEchoSandbox: async (f) => { const sb = f(); try { assert.equal((await sb.run(['echo', 'hi'])).stdoutText, 'echo hi\\n'); } finally { await sb.close(); } } },
  'adapter-local-1': { runSnippet: async (f) => assert.equal(await f('echo private > /workspace/note; cat /workspace/note'), 'private\\n') },
  'adapter-local-1-plain': { runSnippetPlain: async (f) => assert.equal(await f('echo plain'), 'plain\\n') },
  'adapter-local-2': { runTests: async (f) => assert.equal(await f(checkout), true) },
  'adapter-local-3': { describeRevision: async (f) => assert.equal(await f(checkout, 'HEAD'), 'first subject') },
  'adapter-local-4': { sortLines: async (f) => assert.deepEqual(await f(['pear', 'apple', 'fig']), ['apple', 'fig', 'pear']) },
  'adapter-local-5': { askPython: async (f) => assert.match(await f('6 * 7'), /\\r\\n42\\r\\n/) },
};
const modules = ${JSON.stringify(modules)};
for (const { file, path } of modules) {
  const exports = await import(path);
  for (const [name, value] of Object.entries(exports)) {
    const call = calls[file]?.[name];
    assert.ok(call, \`the example \${file} exports \${name}, which scripts/fresh-clone.mjs does not call: add it\`);
    await call(value);
    console.log(\`ok \${file} \${name}\`);
  }
  for (const name of Object.keys(calls[file] ?? {})) assert.ok(name in exports, \`the example \${file} no longer exports \${name}\`);
  if (Object.keys(exports).length === 0) console.log(\`ok \${file} (ran)\`);
}
`,
  );
  const ran = sh(`cd ${JSON.stringify(checkout)} && node ${JSON.stringify(join(project, 'run-examples.mjs'))}`, project);
  process.stdout.write(ran);

  step('the kit from the installed tarball');
  sh("npx --no-install sandstream-conformance node_modules/@sandstream/adapter-local/dist/index.js --include 'arguments.*,stdin.*' --reporter json --out report.json", project);
  const report = JSON.parse(readFileSync(join(project, 'report.json'), 'utf8'));
  assert.equal(report.kitVersion, version);
  assert.equal(report.ok, true);
  assert.ok(report.summary.pass >= 10 && report.summary.fail === 0, `passed ${report.summary.pass}, failed ${report.summary.fail}`);
  process.stdout.write(`kit ${report.kitVersion} (spec ${report.specVersion}): ${report.summary.pass} cases passed\n`);

  step('passed');
} finally {
  if (flags.keep) process.stdout.write(`kept ${work}\n`);
  else rmSync(work, { recursive: true, force: true });
}
