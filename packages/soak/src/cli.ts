#!/usr/bin/env node
/**
 * `sandstream-soak --adapter local|e2b|vercel --count N --concurrency N --seed N`
 * runs a soak and prints its report. Exit status: 0 when every check held,
 * 1 on any violation, 2 when the harness itself failed (bad flags included).
 */
import { parseArgs } from 'node:util';
import { formatReport } from './report.js';
import { canCollect, runSoak, type SoakOptions } from './runner.js';
import { ADAPTERS, type AdapterName } from './targets.js';

const USAGE = `usage: sandstream-soak --adapter ${ADAPTERS.join('|')} [--count 2000] [--concurrency 50] [--seed N]
                       [--deadline-s 1800] [--process-bound-s 120] [--grace-ms 250] [--kill-wait-ms 20000]
                       [--heap-bound-mib 8] [--json]
Run with node --expose-gc to measure the heap.`;

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
  const options: SoakOptions = {
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

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`sandstream-soak: the harness failed: ${String((error as Error)?.stack ?? error)}`);
    process.exit(2);
  },
);
