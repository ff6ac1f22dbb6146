/**
 * The rootfs of an image built with no registry: busybox-static's applets
 * in an otherwise empty tree, with the host programs a test needs copied in.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { findExecutable } from './programs.js';

/** The shared libraries `ldd` lists for a dynamically linked program (none for a static one). */
function librariesOf(program: string): string[] {
  let listed: string;
  try {
    listed = execFileSync('ldd', [program], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    // "not a dynamic executable": nothing to copy.
    return [];
  }
  return listed
    .split('\n')
    .map((line) => /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line)?.[1])
    .filter((path): path is string => path !== undefined);
}

/** Copies `path` (followed through symlinks) to the same path under `rootfs`. */
function copyIn(rootfs: string, path: string): void {
  const target = join(rootfs, path);
  mkdirSync(dirname(target), { recursive: true });
  execFileSync('cp', ['-L', path, target]);
}

/**
 * A rootfs tarball under `dir` of busybox-static's applets, `/etc/passwd`
 * with root, user and nobody, and a sticky /tmp; with `tools`, host programs
 * copied in at their paths with the libraries `ldd` lists (GNU `env` for the
 * supervisor's `--default-signal`, util-linux's `prlimit`), and with
 * `libraryPrograms` only the libraries of host programs a test bind-mounts
 * in (node). Resolves with the tarball's path.
 */
export function busyboxTarball(dir: string, tools: readonly string[] = [], libraryPrograms: readonly string[] = []): string {
  const busybox = findExecutable('busybox');
  if (busybox === undefined) throw new Error('busybox is not installed, so no image can be built without a registry');
  const rootfs = join(dir, 'rootfs');
  for (const sub of ['bin', 'etc', 'tmp', 'proc', 'dev', 'sys', 'root', 'home/user']) mkdirSync(join(rootfs, sub), { recursive: true });
  chmodSync(join(rootfs, 'tmp'), 0o1777);
  execFileSync('cp', [busybox, join(rootfs, 'bin/busybox')]);
  const applets = execFileSync(busybox, ['--list'], { encoding: 'utf8' })
    .split('\n')
    .filter((name) => /^[\w.[-]+$/.test(name) && name !== 'busybox');
  for (const applet of applets) symlinkSync('busybox', join(rootfs, 'bin', applet));
  writeFileSync(join(rootfs, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n');
  writeFileSync(join(rootfs, 'etc/group'), 'root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n');
  execFileSync('chown', ['1000:1000', join(rootfs, 'home/user')]);
  const libraries = new Set<string>();
  for (const tool of tools) {
    copyIn(rootfs, tool);
    for (const library of librariesOf(tool)) libraries.add(library);
  }
  for (const program of libraryPrograms) for (const library of librariesOf(program)) libraries.add(library);
  for (const library of libraries) copyIn(rootfs, library);
  const tarball = join(dir, 'rootfs.tar');
  execFileSync('tar', ['-C', rootfs, '--numeric-owner', '-cf', tarball, '.']);
  rmSync(rootfs, { recursive: true, force: true });
  return tarball;
}
