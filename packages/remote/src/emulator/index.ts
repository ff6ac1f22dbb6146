/**
 * `@sandstream/remote/emulator`: the kit Sandstream's emulators of remote
 * services are built on, for tests and benches only (no production code
 * imports it). One fault vocabulary and its queue, request recording with a
 * per-request latency, the host's process table by tag and by pid, a place
 * of its own for each environment's background records, and the HTTP
 * plumbing faults need. `EMULATORS.md` says what each emulator built on
 * it reproduces, and how strictly.
 *
 * @packageDocumentation
 */
export { FaultError, FaultQueue, reached, targets } from './faults.js';
export type { Fault, FaultAction, FaultKind, FaultOf, FaultTarget, FaultWhen, StreamPoint } from './faults.js';
export { RequestRecorder, hold, sleep } from './recorder.js';
export type { Arrival, RecordedRequest, RecorderOptions } from './recorder.js';
export {
  ProcessTable,
  descendants,
  groupMembers,
  liveProcesses,
  ownGroupMembers,
  processState,
  signalAll,
  taggedProcesses,
} from './process-table.js';
export type { ProcessEntry, TaggedProcess } from './process-table.js';
export { Connections, answerStatus, closeServer, firstHalf, headerRecord, hijack, listenLocal } from './http.js';
export type { Writers } from './http.js';
export { makeRecordArea, type RecordArea } from './record-area.js';
