#!/usr/bin/env node
/**
 * `sandstream-soak --adapter local|e2b|vercel|docker|ssh --count N --concurrency N --seed N`
 * (`--docker-runtime runsc`: Docker under gVisor)
 * runs a soak and prints its report. Exit status: 0 when every check held,
 * 1 on any violation, 2 when the harness itself failed (bad flags included).
 */
import { spawn } from 'node:child_process';
import { constants as osConstants } from 'node:os';
import { parseArgs } from 'node:util';
import { asUnusedUid, limitSelfUnavailable } from '@sandstream/host-limits';
import { formatReport } from './report.js';
import { canCollect, runSoak, type SoakOptions } from './runner.js';
import { ADAPTERS, type AdapterName } from './targets.js';

const USAGE = `usage: sandstream-soak --adapter ${ADAPTERS.join('|')} [--count 2000] [--concurrency 50] [--seed N]
                       [--deadline-s 1800] [--process-bound-s 120] [--grace-ms 250] [--kill-wait-ms 20000]
                       [--heap-bound-mib 8] [--fd-headroom N] [--proc-headroom N] [--docker-runtime runsc] [--json]
Run with node --expose-gc to measure the heap. --fd-headroom and --proc-headroom run the processes
with only N file descriptors above the baseline, or N tasks above those of the uid (as root, the
run goes on as an unused uid: root is exempt from the process limit).`;

class UsageError extends Error {}

function integer(name: string, value: string | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (!/^-?\d+$/.test(value)) throw new UsageError(`--${name} must be an integer, got ${JSON.stringify(value)}`);
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < min) throw new UsageError(`--${name} must be an integer of at least ${min}, got ${value}`);
  return n;
}

function parse(argv: string[]): { options: SoakOptions; json: boolean } {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        adapter: { type: 'string' },
        count: { type: 'string' },
        concurrency: { type: 'string' },
        seed: { type: 'string' },
        'deadline-s': { type: 'string' },
        'process-bound-s': { type: 'string' },
        'grace-ms': { type: 'string' },
        'kill-wait-ms': { type: 'string' },
        'heap-bound-mib': { type: 'string' },
        'fd-headroom': { type: 'string' },
        'proc-headroom': { type: 'string' },
        'docker-runtime': { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean' },
      },
    }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const adapter = values.adapter;
  if (adapter === undefined) throw new UsageError('--adapter is required');
  if (!(ADAPTERS as readonly string[]).includes(adapter)) throw new UsageError(`--adapter must be one of ${ADAPTERS.join(', ')}, got ${JSON.stringify(adapter)}`);
  let options: SoakOptions = {
    adapter: adapter as AdapterName,
    count: integer('count', values.count, 2000, 1),
    concurrency: integer('concurrency', values.concurrency, 50, 1),
    seed: integer('seed', values.seed, Date.now() % 2 ** 31, 0),
    deadlineMs: integer('deadline-s', values['deadline-s'], 1800, 1) * 1000,
    processBoundMs: integer('process-bound-s', values['process-bound-s'], 120, 1) * 1000,
    graceMs: integer('grace-ms', values['grace-ms'], 250, 0),
    killWaitMs: integer('kill-wait-ms', values['kill-wait-ms'], 20_000, 0),
    heapBoundBytes: integer('heap-bound-mib', values['heap-bound-mib'], 8, 0) * 2 ** 20,
  };
  const dockerRuntime = values['docker-runtime'];
  if (dockerRuntime !== undefined) {
    if (adapter !== 'docker' || dockerRuntime === '') throw new UsageError('--docker-runtime names the OCI runtime of the docker adapter\'s container (runsc: gVisor)');
    options = { ...options, dockerRuntime };
  }
  const openFiles = values['fd-headroom'] === undefined ? undefined : integer('fd-headroom', values['fd-headroom'], 0, 1);
  const processes = values['proc-headroom'] === undefined ? undefined : integer('proc-headroom', values['proc-headroom'], 0, 1);
  if (openFiles !== undefined || processes !== undefined) {
    // As root, a process limit is set after the run started again as another uid (main()).
    const unavailable = limitSelfUnavailable();
    if (unavailable !== undefined) throw new UsageError(`--fd-headroom and --proc-headroom: ${unavailable}`);
    options = { ...options, hostLimits: { ...(openFiles === undefined ? {} : { openFiles }), ...(processes === undefined ? {} : { processes }) } };
  }
  return { options, json: values.json ?? false };
}

async function main(): Promise<number> {
  let parsed;
  try {
    parsed = parse(process.argv.slice(2));
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`sandstream-soak: ${error.message}\n${USAGE}`);
      return 2;
    }
    throw error;
  }
  const { options, json } = parsed;
  if (options.hostLimits?.processes !== undefined && process.getuid?.() === 0) return asUnusedUidAgain();
  if (!canCollect()) console.error('sandstream-soak: global.gc is not exposed (run node with --expose-gc); the heap is not checked');
  console.error(`sandstream-soak: adapter ${options.adapter}, ${options.count} processes, concurrency ${options.concurrency}, seed ${options.seed}`);
  let lastTenth = 0;
  const report = await runSoak({
    ...options,
    onProgress(finished, count) {
      const tenth = Math.floor((finished * 10) / count);
      if (tenth > lastTenth) {
        lastTenth = tenth;
        console.error(`  ${finished}/${count} finished`);
      }
    },
  });
  console.log(json ? JSON.stringify(report, null, 2) : formatReport(report));
  return report.violations.length === 0 ? 0 : 1;
}

/**
 * Root is exempt from the process limit: the same command line runs again
 * as a uid that owns nothing else, and its exit status is this one's.
 */
async function asUnusedUidAgain(): Promise<number> {
  const again = asUnusedUid([process.execPath, ...process.execArgv, ...process.argv.slice(1)]);
  if ('skip' in again) {
    console.error(`sandstream-soak: --proc-headroom as root: ${again.skip}`);
    return 2;
  }
  console.error(`sandstream-soak: root is exempt from the process limit; running as uid ${again.uid}`);
  const child = spawn(again.argv[0]!, again.argv.slice(1), { stdio: 'inherit', env: { ...process.env, ...again.env } });
  return new Promise((resolve) => {
    child.once('error', (error) => {
      console.error(`sandstream-soak: could not run as uid ${again.uid}: ${error.message}`);
      resolve(2);
    });
    child.once('close', (code, signal) => resolve(code ?? (signal === null ? 2 : 128 + (osConstants.signals[signal] ?? 0))));
  });
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`sandstream-soak: the harness failed: ${String((error as Error)?.stack ?? error)}`);
    process.exit(2);
  },
);
