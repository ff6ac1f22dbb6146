// Every version the repository states, held together (VERSIONING.md, ADR-0006): the fixed group's
// package versions, the spec revision each package declares, what the kit reports, the pins
// between the workspaces, and the revisions and ranges the READMEs and the guide name. The test
// reads the versions it compares, so it keeps holding after every `changeset version`.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { SPEC_VERSION } from '@sandstream/types';
import { KIT_SPEC_VERSION, KIT_VERSION } from '../src/version.js';

const root = new URL('../../../', import.meta.url);

interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  sandstream?: { specVersion?: string };
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

const workspaces = (JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { workspaces: string[] }).workspaces;
const manifests: Manifest[] = workspaces.map(
  (dir) => JSON.parse(readFileSync(new URL(`${dir}/package.json`, root), 'utf8')) as Manifest,
);
const byName = new Map(manifests.map((manifest) => [manifest.name, manifest]));
const fixedGroup = (JSON.parse(readFileSync(new URL('.changeset/config.json', root), 'utf8')) as { fixed: string[][] }).fixed[0]!;

/** The major.minor of a semver version. */
const minorOf = (version: string): string => version.split('.').slice(0, 2).join('.');

/** The markdown files that speak to users: the READMEs and the guide (not the ADRs, which record history). */
const userDocs = [
  'README.md',
  ...readdirSync(new URL('docs/', root)).filter((file) => file.endsWith('.md')).map((file) => `docs/${file}`),
  ...workspaces.map((dir) => `${dir}/README.md`).filter((file) => {
    try {
      readFileSync(new URL(file, root));
      return true;
    } catch {
      return false;
    }
  }),
];

describe('versions', () => {
  const groupVersion = byName.get(fixedGroup[0]!)!.version;

  test('the fixed group shares one version, whose major.minor is the spec revision every package declares', () => {
    expect(fixedGroup).toEqual(expect.arrayContaining(['@sandstream/types', '@sandstream/conformance', '@sandstream/adapter-local']));
    for (const name of fixedGroup) expect(byName.get(name)?.version, name).toBe(groupVersion);
    expect(minorOf(groupVersion)).toBe(SPEC_VERSION);
    for (const manifest of manifests.filter((m) => m.sandstream !== undefined)) {
      expect(manifest.sandstream?.specVersion, manifest.name).toBe(SPEC_VERSION);
    }
  });

  test('a pending changeset moves the fixed group by a patch while the group already implements the current spec revision', () => {
    // `changeset version` would otherwise make the group 1.(n+1).0 while it implements spec 1.n.
    const dir = new URL('.changeset/', root);
    const bumps = readdirSync(dir)
      .filter((file) => file.endsWith('.md') && file !== 'README.md')
      .flatMap((file) => {
        const front = /^---\n([\s\S]*?)\n---/.exec(readFileSync(new URL(file, dir), 'utf8'))?.[1] ?? '';
        return [...front.matchAll(/^['"]([^'"]+)['"]:\s*(patch|minor|major)\s*$/gm)].map(([, name, bump]) => ({ file, name: name!, bump: bump! }));
      });
    expect(bumps.length, 'the .changeset directory was read').toBeGreaterThan(0);
    if (minorOf(groupVersion) === SPEC_VERSION) {
      expect(bumps.filter(({ name, bump }) => fixedGroup.includes(name) && bump !== 'patch')).toEqual([]);
    }
  });

  test('the kit reports its package version and the revision it checks, and the CLI prints the same', () => {
    expect(KIT_VERSION).toBe(byName.get('@sandstream/conformance')!.version);
    expect(KIT_SPEC_VERSION).toBe(SPEC_VERSION);
    expect(minorOf(KIT_VERSION)).toBe(KIT_SPEC_VERSION);
    const cli = new URL('../bin/sandstream-conformance.js', import.meta.url);
    const printed = execFileSync(process.execPath, [cli.pathname, '--version'], { encoding: 'utf8' });
    expect(printed.trim()).toBe(`sandstream-conformance ${KIT_VERSION} (spec ${SPEC_VERSION})`);
  });

  test("every workspace pins each other workspace at that workspace's own version", () => {
    const wrong: string[] = [];
    for (const manifest of manifests) {
      for (const deps of [manifest.dependencies, manifest.devDependencies, manifest.peerDependencies]) {
        for (const [name, range] of Object.entries(deps ?? {})) {
          const target = byName.get(name);
          if (target !== undefined && range !== target.version) wrong.push(`${manifest.name} -> ${name}@${range} (it is ${target.version})`);
        }
      }
    }
    expect(wrong, 'a pin npm cannot satisfy from the workspace sends it to the registry').toEqual([]);
  });

  test('the READMEs and the guide name the current revision, and only ranges the group version satisfies', () => {
    const wrong: string[] = [];
    for (const file of userDocs) {
      const text = readFileSync(new URL(file, root), 'utf8');
      // "Sandstream 1.1", "spec 1.1", "**spec 1.1**", "kit 1.1.0": the revision or version a document claims.
      for (const match of text.matchAll(/\b(Sandstream|[Ss]pec|kit)\*{0,2} (\d+\.\d+(?:\.\d+)?)\b/g)) {
        const [phrase, what, version] = match as unknown as [string, string, string];
        const expected = what === 'kit' && version.split('.').length === 3 ? groupVersion : SPEC_VERSION;
        if (version !== expected) {
          wrong.push(`${file}: "${phrase}" (the spec is ${SPEC_VERSION}, the group ${groupVersion})`);
        }
      }
      // A link whose text claims a revision points into that revision's directory.
      for (const match of text.matchAll(/\[Sandstream (\d+\.\d+)\]\(([^)]*)\)/g)) {
        if (!match[2]!.includes(`spec/${match[1]}/`)) wrong.push(`${file}: ${match[0]} points elsewhere`);
      }
      // "~1.1.0", "^1.1": a range recommended for a package of the group (named shortly before it).
      for (const match of text.matchAll(/`([~^])(\d+)\.(\d+)(?:\.(\d+))?`/g)) {
        if (!text.slice(Math.max(0, match.index - 200), match.index).includes('@sandstream/')) continue;
        const [, operator, major, minor, patch = '0'] = match as unknown as [string, string, string, string, string?];
        const [gMajor, gMinor, gPatch] = groupVersion.split('.').map(Number) as [number, number, number];
        const satisfied =
          Number(major) === gMajor &&
          (operator === '~' ? Number(minor) === gMinor && Number(patch) <= gPatch : Number(minor) <= gMinor);
        if (!satisfied) wrong.push(`${file}: ${match[0]} does not admit ${groupVersion}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  test('the public packages outside the fixed group are 0.x and declare the revision they implement (VERSIONING.md)', () => {
    const outside = manifests.filter((m) => m.private !== true && !fixedGroup.includes(m.name));
    expect(outside.map((m) => m.name).sort()).toEqual([
      '@sandstream/adapter-docker',
      '@sandstream/adapter-e2b',
      '@sandstream/adapter-ssh',
      '@sandstream/adapter-vercel',
      '@sandstream/ai-sdk',
      '@sandstream/host-limits',
      '@sandstream/mcp',
      '@sandstream/remote',
    ]);
    // The host limits implement no part of the spec (they cut a process's resources short): no revision to declare.
    const specless = new Set(['@sandstream/host-limits']);
    for (const manifest of outside) {
      expect(manifest.version, manifest.name).toMatch(/^0\.\d+\.\d+$/);
      if (specless.has(manifest.name)) expect(manifest.sandstream, manifest.name).toBeUndefined();
      else expect(manifest.sandstream?.specVersion, manifest.name).toBe(SPEC_VERSION);
    }
  });
});
