// What every job of the benchmark shares: sizes, the bookkeeping of every
// process it starts (killed on any exit), the adapter, statistics,
// formatting, and the raw-spawn baseline.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import os from 'node:os';
import { allProcs, isLiveMember } from './procfs.mjs';

export const KiB = 1024;
export const MiB = 1024 * KiB;
export const GiB = 1024 * MiB;
export const BLOCK = 64 * KiB;
/** True in the fresh Node processes that measure RSS. */
const IS_HELPER = process.argv.some((arg) => arg.startsWith('--rss-child='));

// ---- process bookkeeping and cleanup -------------------------------------

/** Process groups this process started (each command leads its own). */
export const groups = new Set();
/** Helper Node processes (RSS measurements run in fresh processes). */
export const helpers = new Set();
let cleaned = false;

function killEverything() {
  if (cleaned) return;
  cleaned = true;
  for (const pgid of groups) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  groups.clear();
  // Any other direct child: commands started by run(), whose pid is not
  // exposed (each leads its own group), and raw baseline children.
  const helperPids = new Set([...helpers].map((helper) => helper.pid));
  for (const stat of allProcs()) {
    if (stat.ppid !== process.pid || helperPids.has(stat.pid)) continue;
    try {
      process.kill(stat.pgrp === stat.pid ? -stat.pid : stat.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  // Helpers clean up after themselves on SIGTERM.
  for (const helper of helpers) helper.kill('SIGTERM');
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    killEverything();
    if (!IS_HELPER) process.stderr.write(`\nbench: interrupted by ${signal}; every process it started was killed\n`);
    process.exit(128 + os.constants.signals[signal]);
  });
}
process.on('exit', killEverything);
process.on('uncaughtException', (error) => {
  killEverything();
  process.stderr.write(`bench: ${error?.stack ?? error}\n`);
  process.exit(1);
});
process.on('unhandledRejection', (error) => {
  killEverything();
  process.stderr.write(`bench: ${error?.stack ?? error}\n`);
  process.exit(1);
});

/** Every group started, for the final check that nothing was left running. */
const everyGroup = new Set();

export function track(pgid) {
  if (pgid !== undefined) {
    groups.add(pgid);
    everyGroup.add(pgid);
  }
  return pgid;
}

/** Live (non-orphan-zombie) processes left in the groups of this run. */
export function leftovers() {
  return allProcs().filter((stat) => everyGroup.has(stat.pgrp) && isLiveMember(stat, stat.pgrp, process.pid));
}

// ---- helpers ---------------------------------------------------------------

export let createLocalSandbox;
export async function loadAdapter() {
  try {
    ({ createLocalSandbox } = await import('@sandstream/adapter-local'));
  } catch (error) {
    process.stderr.write(
      `bench: cannot load @sandstream/adapter-local (${error.message}).\n` +
        'Build it first: npm run build -w @sandstream/types -w @sandstream/adapter-local\n',
    );
    process.exit(1);
  }
}

/**
 * Another build of the adapter for `--against=DIR` (its dist directory, or its index.js): the
 * isolation job alternates its create-run-close with this build's. Resolved from the current
 * directory; the build must sit where its own imports resolve (inside this repository).
 */
export async function loadOtherBuild(dir) {
  const { resolve } = await import('node:path');
  const { pathToFileURL } = await import('node:url');
  const path = resolve(dir.endsWith('.js') ? dir : `${dir}/index.js`);
  try {
    const module = await import(pathToFileURL(path).href);
    if (typeof module.createLocalSandbox !== 'function') throw new Error('it exports no createLocalSandbox');
    return { path, createLocalSandbox: module.createLocalSandbox };
  } catch (error) {
    process.stderr.write(`bench: cannot load the build to compare against, ${path} (${error.message})\n`);
    process.exit(2);
  }
}

export const gc = globalThis.gc ?? (() => undefined);
export const now = () => performance.now();
export const hrnow = () => process.hrtime.bigint();

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
export function quantile(values, q) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(q * (sorted.length - 1))))];
}

export function ddArgs(bytes) {
  return ['dd', 'if=/dev/zero', `bs=${BLOCK}`, `count=${Math.ceil(bytes / BLOCK)}`, 'status=none'];
}

export function fmtBytes(bytes) {
  if (bytes >= GiB) return `${+(bytes / GiB).toFixed(2)} GiB`;
  if (bytes >= MiB) return `${+(bytes / MiB).toFixed(1)} MiB`;
  return `${+(bytes / KiB).toFixed(1)} KiB`;
}
export const fmtMs = (ms) => (ms >= 100 ? `${ms.toFixed(1)} ms` : `${ms.toFixed(2)} ms`);
export const fmtRate = (bytesPerMs) => `${((bytesPerMs * 1000) / GiB).toFixed(2)} GiB/s`;
export const fmtMiB = (bytes) => `${(bytes / MiB).toFixed(1)} MiB`;

// Spawns a raw child the way a careful caller would: 'data' listeners on
// both pipes, stdin ignored; `detached` puts it in its own group when the
// measurement needs one.
export function rawSpawn(argv, { detached = false, onData } = {}) {
  const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], detached });
  if (detached) track(child.pid);
  const closed = once(child, 'close');
  child.stdout.on('data', onData ?? (() => undefined));
  child.stderr.on('data', () => undefined);
  return { child, closed };
}
