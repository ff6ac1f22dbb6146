/**
 * What the parts of the envd emulator share: its options, request log,
 * fault queue, commands and sandboxes. One object, built by
 * `startEnvdEmulator`, passed to each part.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FaultQueue, ProcessTable, RequestRecorder } from '@sandstream/remote/emulator';
import type { Command } from './command.js';
import type { EnvdEmulatorOptions, EnvdRoute, RecordedRequest } from './types.js';

/** A sandbox of the fake control plane. */
export interface SandboxState {
  readonly sandboxId: string;
  readonly accessToken: string;
  readonly createdAt: number;
  killedAt: number | undefined;
}

/** The node request and response of one HTTP exchange. */
export interface RawRequest {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
}

/** An RPC's node request and response with the request as recorded. */
export interface Call extends RawRequest {
  readonly recorded: RecordedRequest;
}

export interface Envd {
  readonly options: EnvdEmulatorOptions;
  readonly recorder: RequestRecorder<EnvdRoute>;
  readonly faults: FaultQueue<EnvdRoute>;
  /** Every command started, in start order. */
  readonly table: ProcessTable<Command>;
  /** Commands whose end event is not out yet, by pid (what envd's selectors find). */
  readonly running: Map<number, Command>;
  readonly sandboxes: Map<string, SandboxState>;
}

/** The control-plane sandbox a request addresses, if the fake control plane made it. */
export function sandboxOf(envd: Envd, req: IncomingMessage): SandboxState | undefined {
  const id = req.headers['e2b-sandbox-id'];
  return typeof id === 'string' ? envd.sandboxes.get(id) : undefined;
}
