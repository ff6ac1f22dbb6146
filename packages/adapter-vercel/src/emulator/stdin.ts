/**
 * The standard-input endpoint (`POST .../cmd/{cmdId}/stdin`) of seed 002's
 * protocol: base64 writes with confirmed offsets. The service has none;
 * the emulator serves it only with `stdin: true`.
 */
import { HttpError, isRecord, type CommandState, type VercelState } from './state.js';

/**
 * The standard-input protocol: `{ offset, data (base64), close? }`. The
 * offset is how many bytes the client believes were confirmed; bytes the
 * service already has are skipped, so a resent request is harmless. The
 * answer carries the confirmed offset after the write. A command that
 * never had stdin, stopped reading or exited answers 409
 * `stdin_unavailable`.
 */
export async function stdin(
  state: VercelState,
  command: CommandState,
  body: unknown,
  out: { json(status: number, payload: unknown): void },
): Promise<void> {
  if (state.options.stdin !== true) throw new HttpError(404, 'not_found', 'no stdin endpoint');
  if (!isRecord(body)) throw new HttpError(400, 'bad_request', 'the body must be an object');
  const offset = body['offset'];
  const data = body['data'] ?? '';
  if (typeof offset !== 'number' || !Number.isInteger(offset) || offset < 0 || typeof data !== 'string') {
    throw new HttpError(400, 'bad_request', 'offset must be a non-negative integer and data a base64 string');
  }
  const bytes = Buffer.from(data, 'base64');
  // Serialised per command: offsets are only meaningful in order.
  const previous = command.stdinWriting;
  let release!: () => void;
  command.stdinWriting = new Promise((r) => (release = r));
  await previous;
  try {
    const pipe = command.child.stdin;
    const unavailable = (): never => {
      throw new HttpError(409, 'stdin_unavailable', 'the command is not reading standard input', {
        offset: command.stdinConfirmed,
      });
    };
    if (offset > command.stdinConfirmed) {
      throw new HttpError(409, 'offset_mismatch', 'the offset is ahead of what was received', {
        offset: command.stdinConfirmed,
      });
    }
    const fresh = bytes.subarray(Math.min(bytes.byteLength, command.stdinConfirmed - offset));
    if (fresh.byteLength > 0) {
      if (!command.stdinOpen || pipe === null || pipe === undefined || pipe.destroyed || pipe.writableEnded) unavailable();
      const ok = await new Promise<boolean>((resolveWrite) => pipe!.write(fresh, (error) => resolveWrite(!error)));
      if (!ok) {
        command.stdinOpen = false;
        unavailable();
      }
      command.stdinConfirmed += fresh.byteLength;
    } else if (body['close'] !== true && (!command.stdinOpen || pipe == null || pipe.destroyed)) {
      // An empty request answers the confirmed offset, open or not.
      return out.json(200, { offset: command.stdinConfirmed, open: false });
    }
    if (body['close'] === true && command.stdinOpen) {
      command.stdinOpen = false;
      await new Promise<void>((r) => (pipe ? pipe.end(() => r()) : r()));
    }
    out.json(200, { offset: command.stdinConfirmed, open: command.stdinOpen });
  } finally {
    release();
  }
}
