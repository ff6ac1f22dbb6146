import { describe, expectTypeOf, it } from 'vitest';
import type {
  BackgroundProcess,
  AbortError,
  Capability,
  CapabilityManifest,
  ErrorCode,
  ExecResult,
  ExecResultJson,
  InvalidArgument,
  Line,
  OutputChunk,
  OutputChunkJson,
  Process,
  RunOptions,
  Sandbox,
  SandstreamError,
  StdinWriter,
  StreamName,
  StreamOptions,
  TerminalSize,
} from '../src/index.js';
import { hasCapability, lines, validatorFor } from '../src/index.js';
import type { ProcessDriver, SandboxBackend } from '../src/runtime/index.js';
import { defineSandbox } from '../src/runtime/index.js';

describe('OutputChunk', () => {
  it('holds bytes in TypeScript and base64 on the wire', () => {
    expectTypeOf<OutputChunk['data']>().toEqualTypeOf<Uint8Array>();
    expectTypeOf<OutputChunkJson['data']>().toEqualTypeOf<string>();
    expectTypeOf<OutputChunk['stream']>().toEqualTypeOf<'stdout' | 'stderr'>();
    expectTypeOf<StreamName>().toEqualTypeOf<'stdout' | 'stderr'>();
    expectTypeOf<keyof OutputChunk>().toEqualTypeOf<'stream' | 'data'>();
  });
});

describe('ExecResult', () => {
  it('reports the exit as a code or a signal', () => {
    expectTypeOf<ExecResult['exitCode']>().toEqualTypeOf<number | null>();
    expectTypeOf<ExecResult['signal']>().toEqualTypeOf<string | null>();
  });

  it('holds bytes, with text views beside them', () => {
    expectTypeOf<ExecResult['stdout']>().toEqualTypeOf<Uint8Array>();
    expectTypeOf<ExecResult['stderr']>().toEqualTypeOf<Uint8Array>();
    expectTypeOf<ExecResult['stdoutText']>().toEqualTypeOf<string>();
    expectTypeOf<ExecResult['stderrText']>().toEqualTypeOf<string>();
    expectTypeOf<ExecResult['streamed']>().toEqualTypeOf<boolean>();
  });

  it('has no text views in its wire form', () => {
    expectTypeOf<ExecResultJson['stdout']>().toEqualTypeOf<string>();
    expectTypeOf<ExecResultJson>().not.toHaveProperty('stdoutText');
    expectTypeOf<keyof ExecResultJson>().toEqualTypeOf<
      | 'exitCode'
      | 'signal'
      | 'stdout'
      | 'stderr'
      | 'streamed'
      | 'timedOut'
      | 'stdoutTruncated'
      | 'stderrTruncated'
      | 'durationMs'
    >();
  });
});

describe('Sandbox', () => {
  it('stream() returns a Process synchronously, a BackgroundProcess for background: true; run() a promised result', () => {
    const sb = {} as Sandbox;
    expectTypeOf(sb.stream(['true'])).toEqualTypeOf<Process>();
    expectTypeOf(sb.stream(['true'], { background: true })).toEqualTypeOf<BackgroundProcess>();
    expectTypeOf<BackgroundProcess>().toMatchTypeOf<Process>();
    expectTypeOf<Sandbox['run']>().returns.toEqualTypeOf<Promise<ExecResult>>();
    expectTypeOf(sb.stream).parameter(0).toEqualTypeOf<readonly string[]>();
    expectTypeOf<Sandbox['run']>().parameter(1).toEqualTypeOf<RunOptions | undefined>();
  });

  it('is async-disposable and exposes its native handle', () => {
    expectTypeOf<Sandbox>().toExtend<AsyncDisposable>();
    expectTypeOf<Sandbox<{ id: string }>['native']>().toEqualTypeOf<{ id: string }>();
    expectTypeOf<Sandbox['capabilities']>().toEqualTypeOf<Readonly<CapabilityManifest>>();
  });
});

describe('Process', () => {
  it('is an async iterable of OutputChunks and async-disposable', () => {
    expectTypeOf<Process>().toExtend<AsyncIterable<OutputChunk>>();
    expectTypeOf<Process>().toExtend<AsyncDisposable>();
    expectTypeOf<Process[typeof Symbol.asyncDispose]>().returns.toEqualTypeOf<Promise<void>>();
  });

  it('is not thenable, so awaiting it cannot stand in for a scope', () => {
    expectTypeOf<Process>().not.toHaveProperty('then');
    expectTypeOf<Process>().not.toExtend<PromiseLike<unknown>>();
  });

  it('resolves wait() with an ExecResult and offers a writer or null', () => {
    expectTypeOf<Process['wait']>().returns.toEqualTypeOf<Promise<ExecResult>>();
    expectTypeOf<Process['stdin']>().toEqualTypeOf<StdinWriter | null>();
    expectTypeOf<Process['pid']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<StdinWriter['write']>().parameter(0).toEqualTypeOf<Uint8Array | string>();
  });

  it('works with await using and for await', () => {
    async function use(sb: Sandbox): Promise<number> {
      await using proc = sb.stream(['true']);
      let bytes = 0;
      for await (const chunk of proc) {
        expectTypeOf(chunk).toEqualTypeOf<OutputChunk>();
        bytes += chunk.data.byteLength;
      }
      return bytes;
    }
    expectTypeOf(use).returns.toEqualTypeOf<Promise<number>>();
  });
});

describe('Capability and CapabilityManifest', () => {
  it('Capability is the union of the spec capabilities', () => {
    expectTypeOf<Capability>().toEqualTypeOf<
      'streaming' | 'stdin' | 'resource-limits' | 'user' | 'binary-output' | 'attach' | 'attach-reconnect' | 'replay-full' | 'replay-tail' | 'pty'
    >();
  });

  it('binary-output is optional in a manifest (absent means true), the 1.0 capabilities are not', () => {
    const textOnly: CapabilityManifest = { streaming: true, stdin: false, 'resource-limits': false, user: false, 'binary-output': false };
    const fromOnePointZero: CapabilityManifest = { streaming: true, stdin: false, 'resource-limits': false, user: false };
    expectTypeOf<CapabilityManifest['binary-output']>().toEqualTypeOf<boolean | undefined>();
    // @ts-expect-error: the 1.0 capabilities stay required
    const missing: CapabilityManifest = { streaming: true, stdin: false, 'resource-limits': false };
    expectTypeOf(hasCapability).parameter(1).toEqualTypeOf<Capability>();
    expectTypeOf(hasCapability(textOnly, 'binary-output')).toEqualTypeOf<boolean>();
    expectTypeOf([fromOnePointZero, missing]).toBeArray();
  });

  it('CapabilityManifest has one boolean per capability, and x- vendor extensions', () => {
    expectTypeOf<keyof CapabilityManifest>().toEqualTypeOf<Capability | `x-${string}`>();
    expectTypeOf<CapabilityManifest['x-gpu']>().toEqualTypeOf<boolean>();
    const withExtension: CapabilityManifest = { streaming: true, stdin: false, 'resource-limits': false, user: false, 'x-gpu': true };
    expectTypeOf(withExtension).toMatchTypeOf<CapabilityManifest>();
    expectTypeOf<CapabilityManifest['streaming']>().toEqualTypeOf<boolean>();
    expectTypeOf<CapabilityManifest['resource-limits']>().toEqualTypeOf<boolean>();
  });
});

describe('options', () => {
  type Common = 'timeout' | 'env' | 'cwd' | 'signal' | 'limits' | 'user' | 'input' | 'pty';

  it('RunOptions has exactly the run() keys', () => {
    expectTypeOf<keyof RunOptions>().toEqualTypeOf<Common | 'maxOutputBytes' | 'onOutput'>();
    expectTypeOf<NonNullable<RunOptions['onOutput']>>().parameter(0).toEqualTypeOf<OutputChunk>();
    expectTypeOf<RunOptions['input']>().toEqualTypeOf<Uint8Array | string | undefined>();
  });

  it('StreamOptions has exactly the stream() keys', () => {
    expectTypeOf<keyof StreamOptions>().toEqualTypeOf<Common | 'stdin' | 'background'>();
    expectTypeOf<StreamOptions['stdin']>().toEqualTypeOf<'pipe' | 'ignore' | undefined>();
  });

  it('pty takes a terminal size on both calls (spec 1.5)', () => {
    expectTypeOf<RunOptions['pty']>().toEqualTypeOf<TerminalSize | undefined>();
    expectTypeOf<StreamOptions['pty']>().toEqualTypeOf<TerminalSize | undefined>();
    expectTypeOf<keyof TerminalSize>().toEqualTypeOf<'cols' | 'rows'>();
  });

  it('rejects the other call’s options at compile time', () => {
    // @ts-expect-error: stdin is a stream() option
    const run: RunOptions = { stdin: 'pipe' };
    // @ts-expect-error: onOutput is a run() option
    const stream: StreamOptions = { onOutput: () => undefined };
    // @ts-expect-error: 'inherit' is not a stdin mode
    const inherit: StreamOptions = { stdin: 'inherit' };
    expectTypeOf([run, stream, inherit]).toBeArray();
  });
});

describe('errors', () => {
  it('carry typed codes and data', () => {
    expectTypeOf<SandstreamError['code']>().toEqualTypeOf<ErrorCode>();
    expectTypeOf<InvalidArgument['code']>().toEqualTypeOf<'INVALID_ARGUMENT'>();
    expectTypeOf<InvalidArgument['key']>().toEqualTypeOf<string>();
    expectTypeOf<AbortError['result']>().toEqualTypeOf<ExecResult | undefined>();
    expectTypeOf<AbortError>().toExtend<Error>();
  });
});

describe('helpers', () => {
  it('lines() yields Lines', () => {
    expectTypeOf(lines).parameter(0).toEqualTypeOf<AsyncIterable<OutputChunk>>();
    expectTypeOf(lines).returns.toEqualTypeOf<AsyncGenerator<Line, void, undefined>>();
  });

  it('validatorFor() knows the definition names', () => {
    expectTypeOf(validatorFor).parameter(0).toEqualTypeOf<
      | 'StreamName'
      | 'OutputChunk'
      | 'ExecResult'
      | 'Capability'
      | 'CapabilityManifest'
      | 'ErrorCode'
      | 'CaseStatus'
      | 'CaseResult'
      | 'ConformanceReport'
    >();
    // @ts-expect-error: not a definition of the spec
    expectTypeOf(validatorFor('Sandbox')).toBeFunction();
  });

  it('defineSandbox() turns a backend into a Sandbox of its native type', () => {
    expectTypeOf(defineSandbox<{ host: string }>).parameter(0).toEqualTypeOf<SandboxBackend<{ host: string }>>();
    expectTypeOf(defineSandbox<{ host: string }>).returns.toEqualTypeOf<Sandbox<{ host: string }>>();
    expectTypeOf<ReturnType<SandboxBackend['createDriver']>>().toEqualTypeOf<ProcessDriver>();
  });
});
