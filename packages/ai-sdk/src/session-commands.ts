// The part of an AI SDK SandboxSession that Sandstream drives, apart from
// both the adapter and its driver so that neither imports the other for it.
import type {
  Experimental_SandboxProcess as SandboxProcess,
  Experimental_SandboxSession as SandboxSession,
  Experimental_SandboxSpawnOptions as SandboxSpawnOptions,
  Experimental_WritableSandboxProcess as WritableSandboxProcess,
} from '@ai-sdk/provider-utils';

/**
 * What {@link fromSandboxSession} uses of a session: only `spawn` and `run`,
 * so the session of an older `@ai-sdk/provider-utils` (one without `stat`,
 * `listDirectory`, `deleteFile` or `spawn`'s `stdin`, as
 * `@ai-sdk/sandbox-just-bash` 1.0.122 builds on) fits too.
 */
export interface SessionCommands {
  readonly spawn: (options: SandboxSpawnOptions) => PromiseLike<SandboxProcess | WritableSandboxProcess>;
  readonly run: SandboxSession['run'];
}
