/**
 * A command's log stream (`GET .../cmd/{cmdId}/logs`, and the body of an
 * attached start): every record from the start, then live ones until the
 * command ended, with the faults that strike inside a log stream.
 */
import { firstHalf, reached, type FaultOf, type StreamPoint } from '@sandstream/remote/emulator';
import type { CommandState, LogSink, VercelState } from './state.js';
import type { RecordedRequest, VercelRoute } from './types.js';

/** The record that ends a log stream with an error, as the API writes it. */
function errorRecord(fault: FaultOf<'error', VercelRoute>): string {
  return `${JSON.stringify({ stream: 'error', data: { code: fault.code, message: fault.message ?? `${fault.code} (injected)` } })}\n`;
}

/**
 * Replays the command's records from the start, then follows live until it
 * ended; `beforeEnd` writes what an attached start sends last, and
 * `withRecords: false` leaves the records out (an attached start that did
 * not ask for `logs`). Faults with a stream point strike a log stream and
 * an attached start's answer alike, counting the log records sent (an
 * attached start's first record, the command, is not counted).
 */
export function streamLogs(
  state: VercelState,
  command: CommandState,
  res: LogSink,
  record: RecordedRequest,
  beforeEnd?: () => void,
  withRecords = true,
): Promise<void> {
  const take = <K extends 'truncate' | 'error' | 'reset' | 'stall'>(kind: K): FaultOf<K, VercelRoute> | undefined =>
    state.faults.take(record, [kind], (fault) => (fault as { at?: StreamPoint }).at !== undefined);
  const truncate = take('truncate');
  const error = take('error');
  const reset = take('reset');
  const stall = take('stall');
  let index = 0;
  let sentBytes = 0;
  let sentRecords = 0;
  let sinks = state.liveLogs.get(command.id);
  if (sinks === undefined) state.liveLogs.set(command.id, (sinks = new Set()));
  const live = sinks;
  live.add(res);
  const due = (point: StreamPoint | undefined, final: boolean, bytes: number): boolean =>
    point !== undefined && reached(point, sentRecords, sentBytes, final, bytes);
  return new Promise<void>((done) => {
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      live.delete(res);
      if (live.size === 0) state.liveLogs.delete(command.id);
      command.listeners.delete(pump);
      done();
    };
    res.once('close', finish);
    /** The fault due before the next record (`line`, or the end when undefined); true when the stream is over. */
    const strike = (line: Buffer | undefined): boolean => {
      const final = line === undefined;
      const bytes = line?.byteLength ?? 0;
      // An error record still pending when the command ended ends the stream in its place.
      if (error !== undefined && (final || due(error.at, final, bytes))) {
        res.end(errorRecord(error));
        return true;
      }
      if (reset !== undefined && due(reset.at, final, bytes)) {
        state.recorder.answered(record, -1);
        res.destroy();
        return true;
      }
      if (stall !== undefined && due(stall.at, final, bytes)) {
        // Nothing more, and the response stays open until the client goes.
        command.listeners.delete(pump);
        return true;
      }
      if (truncate !== undefined && due(truncate.at, final, bytes)) {
        const at = truncate.at;
        const cut = line === undefined || truncate.boundary === true ? Buffer.alloc(0) : typeof at === 'object' ? line.subarray(0, Math.max(0, at.bytes - sentBytes)) : Buffer.from(firstHalf(line));
        state.recorder.answered(record, -1);
        if (truncate.close === 'end') res.end(cut.byteLength === 0 ? undefined : cut);
        else {
          if (cut.byteLength > 0) res.write(cut);
          setImmediate(() => res.destroy());
        }
        return true;
      }
      return false;
    };
    const pump = (): void => {
      if (finished || res.destroyed) return finish();
      if (!withRecords) index = command.records.length;
      while (index < command.records.length) {
        const line = state.output.line(command.records[index]!);
        if (strike(line)) return finish();
        index++;
        sentBytes += line.byteLength;
        sentRecords++;
        if (!res.write(line)) {
          res.once('drain', pump);
          return;
        }
      }
      if (command.ended) {
        if (strike(undefined)) return finish();
        beforeEnd?.();
        res.end();
        return finish();
      }
      command.listeners.add(pump);
    };
    pump();
  });
}
