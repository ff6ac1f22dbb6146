/**
 * Accumulates one stream's bytes up to a cap; what does not fit is dropped
 * and flagged. `run()` keeps its output with it, and so can anything that
 * reads a Process and keeps a bounded copy (a tool's result, say).
 *
 * @example
 * ```ts
 * import { Capture } from '@sandstream/types/runtime';
 * const kept = new Capture(4);
 * kept.add(new TextEncoder().encode('hello'));
 * console.log(kept.text(), kept.truncated); // "hell" true
 * ```
 */
export class Capture {
  private readonly parts: Uint8Array[] = [];
  private kept = 0;
  truncated = false;
  constructor(private readonly cap: number) {}

  add(data: Uint8Array): void {
    const room = this.cap - this.kept;
    if (data.byteLength <= room) {
      this.parts.push(data);
      this.kept += data.byteLength;
      return;
    }
    if (room > 0) {
      this.parts.push(data.subarray(0, room));
      this.kept += room;
    }
    this.truncated = true;
  }

  /** The kept bytes decoded as UTF-8 (invalid sequences replaced; a byte-order mark kept). */
  text(): string {
    return new TextDecoder('utf-8', { ignoreBOM: true }).decode(this.bytes());
  }

  /**
   * The kept bytes as a plain Uint8Array that owns its memory: never a view
   * into Node's shared Buffer pool (whose other contents `.buffer` would
   * expose) nor into a larger read buffer (which it would keep alive).
   */
  bytes(): Uint8Array {
    const only = this.parts.length === 1 ? this.parts[0]! : undefined;
    if (only !== undefined && only.byteOffset === 0 && only.byteLength === only.buffer.byteLength) {
      return new Uint8Array(only.buffer, 0, only.byteLength);
    }
    const out = new Uint8Array(this.kept);
    let offset = 0;
    for (const part of this.parts) {
      out.set(part, offset);
      offset += part.byteLength;
    }
    return out;
  }
}
