/**
 * What the parts of the Vercel emulator share: its sessions and their
 * commands, the output store, the request log and fault queue, the errors
 * the API answers, and where an answer is written.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { FaultQueue, RequestRecorder } from '@sandstream/remote/emulator';
import type { LogRecord, OutputStore } from './output-store.js';
import type { EmulatorOptions, RecordedRequest, VercelRoute } from './types.js';

export interface CommandState {
  readonly id: string;
  readonly name: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly sessionId: string;
  readonly startedAt: number;
  /** The variables the start request named (not the sandbox's base environment). */
  readonly env: Readonly<Record<string, string>>;
  readonly child: ChildProcess;
  exitCode: number | null;
  durationMs: number | undefined;
  readonly records: LogRecord[];
  /** Both pipes closed and the leader reaped: the log stream can end. */
  ended: boolean;
  readonly listeners: Set<() => void>;
  readonly exitWaiters: Set<() => void>;
  stdinConfirmed: number;
  stdinOpen: boolean;
  stdinWriting: Promise<void>;
  timer: NodeJS.Timeout | undefined;
}

export interface SessionState {
  readonly id: string;
  readonly name: string;
  status: 'running' | 'stopped';
  readonly createdAt: number;
  updatedAt: number;
  stoppedAt: number | undefined;
  readonly timeout: number;
  readonly commands: Map<string, CommandState>;
}

/** Where a log stream is written: the HTTP response, or nothing. */
export interface LogSink {
  write(chunk: string | Uint8Array): boolean;
  end(chunk?: string | Uint8Array): void;
  once(event: 'close' | 'drain', listener: () => void): unknown;
  destroy(): void;
  readonly destroyed: boolean;
}

/** Where a route writes its answer: one JSON answer, or a stream. */
export interface Out {
  json(status: number, payload: unknown): void;
  stream(): LogSink;
  readonly record: RecordedRequest;
}

export interface VercelState {
  readonly options: EmulatorOptions;
  /** The sandbox's working directory. */
  readonly cwd: string;
  readonly sessions: Map<string, SessionState>;
  /** Log streams being served, per command id. */
  readonly liveLogs: Map<string, Set<LogSink>>;
  readonly output: OutputStore;
  readonly recorder: RequestRecorder<VercelRoute>;
  readonly faults: FaultQueue<VercelRoute>;
}

/** An error the API answers: `{ error: { code, message }, ...extra }` with `status`. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** The HTTP status the API answers an error code with (`error` faults name codes only). */
export function statusOfCode(code: string): number {
  const statuses: Record<string, number> = { bad_request: 400, unauthorized: 401, forbidden: 403, not_found: 404, conflict: 409, sandbox_stopped: 410, rate_limited: 429 };
  return statuses[code] ?? 500;
}

export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(9).toString('base64url')}`;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
