import type { Sandbox } from '@sandstream/types';

/**
 * Defines the tests of the argv hint (`run(['ls -la'])` fails with
 * `SpawnFailed` saying argv is not a shell command line, and how to write
 * it) against a sandbox from `openSandbox`, which the caller closes.
 */
export declare function describeArgvHint(name: string, openSandbox: () => Sandbox | Promise<Sandbox>): void;
