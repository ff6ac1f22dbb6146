// What a public package carries to its registry page: a README whose links work there, a
// LICENSE, and the metadata that points back at the repository. `npm pack --dry-run` lists
// exactly the files a tarball would hold.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';

const root = new URL('../../../', import.meta.url);
const REPOSITORY = 'https://github.com/sandstream/sandstream';

interface Manifest {
  name: string;
  private?: boolean;
  license?: string;
  repository?: { type?: string; url?: string; directory?: string };
  homepage?: string;
  bugs?: { url?: string };
}

const workspaces = (JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { workspaces: string[] }).workspaces;
const publicPackages = workspaces
  .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(new URL(`${dir}/package.json`, root), 'utf8')) as Manifest }))
  .filter(({ manifest }) => manifest.private !== true);

/**
 * The paths `npm pack` would put in each workspace's tarball, by package name: one npm process for
 * them all (`--workspaces`), where one per package cost about a second of CPU each.
 */
function packedFiles(): Map<string, Set<string>> {
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts', '--workspaces'], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const packs = JSON.parse(out) as { name: string; files: { path: string }[] }[];
  return new Map(packs.map((pack) => [pack.name, new Set(pack.files.map((file) => file.path))]));
}

const packed = packedFiles();

/** The link targets of a markdown text: inline links and images, reference definitions. */
function linkTargets(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '');
  return [
    ...[...prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1]!),
    ...[...prose.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((match) => match[1]!),
  ];
}

describe.each(publicPackages)('$manifest.name', ({ dir, manifest }) => {
  const files = packed.get(manifest.name) ?? new Set<string>();

  test('every relative link of its README resolves to a file in the tarball; the rest are absolute', () => {
    expect(files.has('README.md')).toBe(true);
    const readme = readFileSync(new URL(`${dir}/README.md`, root), 'utf8');
    const broken = linkTargets(readme).filter((target) => {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#')) return false;
      const path = decodeURI(target.split('#')[0]!).replace(/^\.\//, '');
      return !files.has(path) && ![...files].some((file) => file.startsWith(`${path.replace(/\/$/, '')}/`));
    });
    expect(broken, 'links a reader of the package page cannot follow').toEqual([]);
  });

  test('carries the Apache-2.0 LICENSE and points back at the repository', () => {
    expect(manifest.license).toBe('Apache-2.0');
    expect(files.has('LICENSE')).toBe(true);
    const license = readFileSync(new URL(`${dir}/LICENSE`, root), 'utf8');
    expect(license).toContain('Apache License\n                           Version 2.0, January 2004');
    expect(license).toBe(readFileSync(new URL('LICENSE', root), 'utf8'));
    expect(manifest.repository).toEqual({ type: 'git', url: `git+${REPOSITORY}.git`, directory: dir });
    expect(manifest.homepage).toBe(`${REPOSITORY}/tree/main/${dir}#readme`);
    expect(manifest.bugs).toEqual({ url: `${REPOSITORY}/issues` });
  });
});

test('the public packages are the three of the fixed group, the five 0.x remote packages, the 0.x MCP server, the 0.x AI SDK interop and the 0.x host limits', () => {
  expect(publicPackages.map(({ manifest }) => manifest.name).sort()).toEqual([
    '@sandstream/adapter-docker',
    '@sandstream/adapter-e2b',
    '@sandstream/adapter-local',
    '@sandstream/adapter-ssh',
    '@sandstream/adapter-vercel',
    '@sandstream/ai-sdk',
    '@sandstream/conformance',
    '@sandstream/host-limits',
    '@sandstream/mcp',
    '@sandstream/remote',
    '@sandstream/types',
  ]);
});
