/**
 * Wrappers for spec 1.2's background commands (ADR-0036): a Sandbox whose
 * `attach()`, `commands()` and background `stream()` delegate to a real one,
 * and a BackgroundProcess delegating to a real one, except where a defect
 * replaces a part.
 */
import type { AttachOptions, BackgroundProcess, CapabilityManifest, CommandInfo, ExecResult, OutputChunk, Process, Sandbox, Signal, StreamName, StreamOptions } from '@sandstream/types';
import { wrapSandbox, type ChunkIterator } from './wrap.js';

/** What a defective BackgroundProcess replaces; everything else is delegated. */
export interface ViewDefects {
  iterator?(inner: BackgroundProcess): ChunkIterator;
  skipped?(inner: BackgroundProcess): Readonly<Record<StreamName, number>> | undefined;
  detach?(inner: BackgroundProcess): Promise<void>;
  dispose?(inner: BackgroundProcess): Promise<void>;
  wait?(inner: BackgroundProcess): Promise<ExecResult>;
}

/** A BackgroundProcess delegating to `inner`, except where `defects` says otherwise. */
export class WrappedView implements BackgroundProcess {
  constructor(
    private readonly inner: BackgroundProcess,
    private readonly defects: ViewDefects,
  ) {}
  get id(): string {
    return this.inner.id;
  }
  get argv(): readonly string[] {
    return this.inner.argv;
  }
  get pid(): number | undefined {
    return this.inner.pid;
  }
  get stdin(): null {
    return null;
  }
  get exited(): boolean {
    return this.inner.exited;
  }
  get commandId(): string | undefined {
    return this.inner.commandId;
  }
  get skipped(): Readonly<Record<StreamName, number>> | undefined {
    return this.defects.skipped === undefined ? this.inner.skipped : this.defects.skipped(this.inner);
  }
  started(): Promise<void> {
    return this.inner.started();
  }
  [Symbol.asyncIterator](): ChunkIterator {
    return this.defects.iterator?.(this.inner) ?? this.inner[Symbol.asyncIterator]();
  }
  wait(): Promise<ExecResult> {
    return this.defects.wait?.(this.inner) ?? this.inner.wait();
  }
  kill(signal?: Signal): Promise<void> {
    return this.inner.kill(signal);
  }
  detach(): Promise<void> {
    return this.defects.detach?.(this.inner) ?? this.inner.detach();
  }
  [Symbol.asyncDispose](): Promise<void> {
    return this.defects.dispose?.(this.inner) ?? this.inner[Symbol.asyncDispose]();
  }
}

/** What a defective Sandbox replaces of spec 1.2; everything else is delegated. */
export interface BackgroundDefects {
  /** Replaces `stream()` with `background: true`. */
  background?(inner: Sandbox, argv: readonly string[], options: StreamOptions): BackgroundProcess;
  /** Applied to every Process `stream()` with `background: true` gives. */
  starter?: ViewDefects;
  attach?(inner: Sandbox, commandId: string, options: AttachOptions | undefined): Promise<BackgroundProcess>;
  /** Applied to every Process `attach()` gives. */
  attached?: ViewDefects;
  commands?(inner: Sandbox): Promise<readonly CommandInfo[]>;
  close?(inner: Sandbox): Promise<void>;
  /** Read on every access of `sandbox.capabilities`. */
  capabilities?(inner: Sandbox): Readonly<CapabilityManifest>;
}

/** The real attach() of `sandbox`. */
export function attachOf(sandbox: Sandbox): (id: string, options?: AttachOptions) => Promise<BackgroundProcess> {
  return (id, options) => sandbox.attach!(id, options);
}

/** A Sandbox delegating to `inner`, except for the parts of spec 1.2 `defects` replaces. */
export function wrapBackground(inner: Sandbox, defects: BackgroundDefects): Sandbox {
  const sandbox = wrapSandbox(inner, {
    stream(real, argv, options): Process {
      if (options?.background !== true) return real.stream(argv, options);
      const proc = defects.background?.(real, argv, options) ?? real.stream(argv, { ...options, background: true });
      return defects.starter === undefined ? proc : new WrappedView(proc, defects.starter);
    },
    ...(defects.close === undefined ? {} : { close: defects.close }),
    ...(defects.capabilities === undefined ? {} : { capabilities: defects.capabilities }),
  });
  sandbox.attach = async (commandId, options) => {
    const proc = await (defects.attach?.(inner, commandId, options) ?? inner.attach!(commandId, options));
    return defects.attached === undefined ? proc : new WrappedView(proc, defects.attached);
  };
  sandbox.commands = () => defects.commands?.(inner) ?? inner.commands!();
  return sandbox;
}

/** An iterator of `chunks`, whose `return()` disposes `owner` as leaving a loop does. */
export function chunksOf(owner: BackgroundProcess, chunks: AsyncGenerator<OutputChunk, undefined>): ChunkIterator {
  return {
    next: () => chunks.next(),
    async return() {
      await chunks.return(undefined);
      await owner[Symbol.asyncDispose]();
      return { value: undefined, done: true };
    },
  };
}
