import type { Sandbox } from '@sandstream/types';

/** Per stream, a text. */
export interface Streams {
  readonly stdout: string;
  readonly stderr: string;
}

/** The command the cross-process attach tests start: its argv, its whole output, and how each stream ends. */
export declare const SERVER: { readonly argv: readonly string[]; readonly expected: Streams; readonly ends: Streams };

/** What the second process saw. */
export interface SecondProcessSaw {
  readonly listed: Array<{ commandId: string; argv: string[]; state: string }>;
  readonly seen: Streams;
  readonly skipped: unknown;
  readonly after: Array<{ commandId: string }>;
}

/** The second process's part: list, attach, read until `ends`, kill by leaving the scope, close. */
export declare function readAndKill(sb: Sandbox, commandId: string, ends: Streams): Promise<SecondProcessSaw>;

/** Runs `child` (a fixture) with `request` as JSON, and parses what it printed. */
export declare function secondProcess(child: string, request: unknown): Promise<SecondProcessSaw>;

/** The cross-process attach test (see reconnect.js); resolves with the command's id once `sb` is closed. */
export declare function reconnectFromAnotherProcess(test: {
  readonly expect: (value: unknown) => { toEqual(expected: unknown): void; toBe(expected: unknown): void };
  readonly sb: Sandbox;
  readonly child: string;
  readonly requestOf: (commandId: string) => unknown;
  readonly isGone: (commandId: string) => boolean;
  readonly waitFor: (condition: () => boolean, ms: number, what: string) => Promise<void>;
}): Promise<string>;
