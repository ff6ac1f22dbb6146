/**
 * The Vercel Sandbox API as a `RemoteTransport` of `@sandstream/remote`
 * (ADR-0033, ADR-0027, ADR-0045): a process is one attached start (`POST .../cmd`
 * with `wait` and `logs`), whose one answer carries the command's id, its
 * log records and its end; a signal is the API's kill of the command's own
 * process, the supervisor, which forwards it to the tree; helpers are
 * attached starts of their own.
 */
import type { HelperOptions, HelperResult, RemoteTransport, StartRequest, TransportProcess, TransportSink } from '@sandstream/remote';
import { FORWARDED_SIGNALS } from '@sandstream/remote';
import { VercelProcess } from './process.js';
import { startBody, type VercelTransportSettings } from './settings.js';
import { decodeStatus } from './status.js';

export type { VercelTransportSettings } from './settings.js';

/** Vercel Sandbox through its API. */
export class VercelTransport implements RemoteTransport {
  /** The API's kill takes any signal; the supervisor forwards the ones it traps. */
  readonly signals: ReadonlySet<string> = new Set(FORWARDED_SIGNALS.map((name) => `SIG${name}`));

  constructor(readonly settings: VercelTransportSettings) {}

  start(request: StartRequest, sink: TransportSink): TransportProcess {
    return new VercelProcess(this.settings, request, sink);
  }

  /** A helper: one attached start without logs, to its end record. */
  async run(argv: readonly string[], options: HelperOptions): Promise<HelperResult> {
    const abort = AbortSignal.timeout(options.timeoutMs);
    for await (const record of this.settings.api.records({ start: startBody(argv, this.settings) }, abort)) {
      if (record.kind === 'command' && record.exitCode !== null) return { exitCode: decodeStatus(record.exitCode).exitCode };
    }
    throw new Error('the helper command ended without its exit');
  }
}
