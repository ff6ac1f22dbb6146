// toSandboxSession's file methods over the local adapter, checked against the host's filesystem.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLocalSandbox } from '@sandstream/adapter-local';
import { toSandboxSession } from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'ai-sdk-files-'));
const sandbox = createLocalSandbox();
const session = toSandboxSession(sandbox, { cwd: dir, maxFileBytes: 1024 * 1024 });
const every = Uint8Array.from({ length: 256 }, (_, i) => i);

afterAll(async () => {
  await sandbox.close();
  rmSync(dir, { recursive: true, force: true });
});

function byteStream(parts: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    pull(controller) {
      const part = parts.shift();
      if (part === undefined) controller.close();
      else controller.enqueue(part);
    },
  });
}

describe('toSandboxSession: files', () => {
  it('writes text and bytes, creating parent directories, and reads them back exactly', async () => {
    await session.writeTextFile({ path: 'a/b/hello.txt', content: 'héllo\n' });
    expect(readFileSync(join(dir, 'a/b/hello.txt'), 'utf8')).toBe('héllo\n');
    expect(await session.readTextFile({ path: 'a/b/hello.txt' })).toBe('héllo\n');
    await session.writeBinaryFile({ path: join(dir, 'bytes.bin'), content: every });
    expect([...readFileSync(join(dir, 'bytes.bin'))]).toEqual([...every]);
    expect([...((await session.readBinaryFile({ path: 'bytes.bin' })) ?? [])]).toEqual([...every]);
    await session.writeTextFile({ path: 'a/b/hello.txt', content: 'over' });
    expect(readFileSync(join(dir, 'a/b/hello.txt'), 'utf8')).toBe('over');
  });

  it('writeFile streams its content into the file; readFile streams it out', async () => {
    const parts = Array.from({ length: 64 }, () => every);
    await session.writeFile({ path: 'c/stream.bin', content: byteStream([...parts]) });
    const expected = Buffer.concat(parts);
    expect(readFileSync(join(dir, 'c/stream.bin')).equals(expected)).toBe(true);
    const stream = await session.readFile({ path: 'c/stream.bin' });
    expect(Buffer.from(await new Response(stream).arrayBuffer()).equals(expected)).toBe(true);
  });

  it('readTextFile takes 1-based inclusive line ranges, reading through EOF past the end', async () => {
    writeFileSync(join(dir, 'lines.txt'), 'one\ntwo\nthree\nfour');
    expect(await session.readTextFile({ path: 'lines.txt', startLine: 2, endLine: 3 })).toBe('two\nthree\n');
    expect(await session.readTextFile({ path: 'lines.txt', startLine: 3, endLine: 99 })).toBe('three\nfour');
    expect(await session.readTextFile({ path: 'lines.txt', endLine: 1 })).toBe('one\n');
  });

  it('reads resolve to null for a missing file and reject for a directory or a file past the bound', async () => {
    expect(await session.readFile({ path: 'missing' })).toBeNull();
    expect(await session.readBinaryFile({ path: 'missing' })).toBeNull();
    expect(await session.readTextFile({ path: 'missing' })).toBeNull();
    mkdirSync(join(dir, 'adir'));
    await expect(session.readTextFile({ path: 'adir' })).rejects.toThrow(/is a directory/);
    writeFileSync(join(dir, 'big'), Buffer.alloc(1024 * 1024 + 1));
    await expect(session.readBinaryFile({ path: 'big' })).rejects.toThrow(/larger than/);
  });

  it('writes reject when the path is a directory', async () => {
    mkdirSync(join(dir, 'wdir'));
    await expect(session.writeTextFile({ path: 'wdir', content: 'x' })).rejects.toThrow(/is a directory/);
    await expect(session.writeFile({ path: 'wdir', content: byteStream([every]) })).rejects.toThrow();
  });

  it('stat follows symlinks and tells files, directories and missing paths apart', async () => {
    writeFileSync(join(dir, 'five'), '12345');
    symlinkSync(join(dir, 'five'), join(dir, 'link-to-five'));
    expect(await session.stat({ path: 'five' })).toEqual({ type: 'file', size: 5 });
    expect(await session.stat({ path: 'link-to-five' })).toEqual({ type: 'file', size: 5 });
    expect(await session.stat({ path: dir })).toEqual({ type: 'directory', size: 0 });
    expect(await session.stat({ path: '/dev/null' })).toEqual({ type: 'other', size: 0 });
    expect(await session.stat({ path: 'nothing-here' })).toBeNull();
  });

  it('listDirectory lists entries with their types, hidden ones and odd names included, without descending', async () => {
    const root = join(dir, 'list');
    mkdirSync(join(root, 'sub'), { recursive: true });
    writeFileSync(join(root, 'sub', 'deep'), '');
    writeFileSync(join(root, '.hidden'), '');
    writeFileSync(join(root, 'two\nlines *'), '');
    symlinkSync('/nonexistent', join(root, 'dangling'));
    const entries = await session.listDirectory({ path: 'list' });
    expect(entries?.sort((a, b) => a.name.localeCompare(b.name))).toEqual([
      { name: '.hidden', type: 'file' },
      { name: 'dangling', type: 'symlink' },
      { name: 'sub', type: 'directory' },
      { name: 'two\nlines *', type: 'file' },
    ]);
    expect(await session.listDirectory({ path: 'list/sub/deep-missing' })).toBeNull();
    await expect(session.listDirectory({ path: 'list/sub/deep' })).rejects.toThrow(/not a directory/);
    mkdirSync(join(root, 'empty'));
    expect(await session.listDirectory({ path: 'list/empty' })).toEqual([]);
  });

  it('deleteFile deletes a file or a symlink (not its target), says false when missing, and rejects for a directory', async () => {
    writeFileSync(join(dir, 'target'), 'kept');
    symlinkSync(join(dir, 'target'), join(dir, 'to-target'));
    expect(await session.deleteFile({ path: 'to-target' })).toBe(true);
    expect(existsSync(join(dir, 'target'))).toBe(true);
    expect(await session.deleteFile({ path: 'target' })).toBe(true);
    expect(existsSync(join(dir, 'target'))).toBe(false);
    expect(await session.deleteFile({ path: 'target' })).toBe(false);
    mkdirSync(join(dir, 'ddir'));
    await expect(session.deleteFile({ path: 'ddir' })).rejects.toThrow(/is a directory/);
  });

  it('a path is an argument, never shell text', async () => {
    const name = 'x; touch pwned $(touch pwned2) "q"';
    await session.writeTextFile({ path: name, content: 'safe' });
    expect(readFileSync(join(dir, name), 'utf8')).toBe('safe');
    expect(existsSync(join(dir, 'pwned')) || existsSync(join(dir, 'pwned2'))).toBe(false);
  });
});
