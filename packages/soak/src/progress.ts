/**
 * Where one process of a run has got to, and when it last moved: a process
 * is hung when it makes no progress for the bound (no output, no write to
 * its input, no step taken), not when it is merely slow, and a hang names
 * the step it stopped at (the start, the reading, the writing of its input,
 * the wait, the disposal).
 */

/** The steps of a process, in the order a consumer takes them. */
export type Stage = 'starting' | 'reading' | 'detaching' | 'attaching' | 'listing' | 'waiting' | 'disposing' | 'closing the sandbox' | 'owner killed' | 'checking' | 'done';

/** Mutable progress of one process, updated by consume() and feed(). */
export class Progress {
  #stage: Stage = 'starting';
  /** When it last moved (performance.now()). */
  last = performance.now();
  chunks = 0;
  bytes = 0;
  /** Writes to standard input done, of how many planned (0 planned: no input). */
  writes = 0;
  writesPlanned = 0;
  stdin: 'none' | 'writing' | 'ending' | 'ended' | 'failed' = 'none';

  get stage(): Stage {
    return this.#stage;
  }

  set stage(stage: Stage) {
    this.#stage = stage;
    this.moved();
  }

  /** Something happened: a chunk, a write, a step. */
  moved(): void {
    this.last = performance.now();
  }

  /** One output chunk of `byteLength` bytes arrived. */
  chunk(byteLength: number): void {
    this.chunks++;
    this.bytes += byteLength;
    this.moved();
  }

  /** One write to standard input was done. */
  wrote(): void {
    this.writes++;
    this.moved();
  }

  /**
   * Resolves with `'hung'` once the process has made no progress for
   * `boundMs`. One that still moves is slow, not hung (64 writes to its
   * input, each a round trip, take minutes on a starved machine); the run's
   * deadline bounds those.
   */
  stillFor(boundMs: number): { readonly hung: Promise<'hung'>; stop(): void } {
    let timer: NodeJS.Timeout | undefined;
    const hung = new Promise<'hung'>((resolve) => {
      const check = (): void => {
        const idle = performance.now() - this.last;
        if (idle >= boundMs) resolve('hung');
        else timer = setTimeout(check, boundMs - idle);
      };
      timer = setTimeout(check, boundMs);
    });
    return { hung, stop: () => clearTimeout(timer) };
  }

  /** A line for a violation: the stage, the output so far, and standard input's state. */
  describe(): string {
    const input = this.stdin === 'none' ? 'no stdin' : `stdin ${this.writes}/${this.writesPlanned} writes, ${this.stdin}`;
    return `${this.stage}; ${this.chunks} chunks, ${this.bytes} bytes received; ${input}`;
  }
}
