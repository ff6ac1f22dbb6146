/** Defects of spec 1.2's background commands and attach (ADR-0036), each the local adapter with one. */
import { CommandNotFound, InvalidState, type BackgroundProcess, type CapabilityManifest, type OutputChunk, type Sandbox, type StreamName } from '@sandstream/types';
import { defineSandbox } from '@sandstream/types/runtime';
import { localBackend } from '@sandstream/adapter-local';
import type { BrokenAdapter } from './adapter.js';
import { GRACE_MS, type Lab } from './lab.js';
import { omit } from './wrap.js';
import { chunksOf, wrapBackground, WrappedView } from './wrap-background.js';

/** The local runtime keeping every byte of a background command: `replay-full` (ADR-0036, `replayBytes: Infinity`). */
export function unboundedReplay(lab: Lab): Sandbox {
  const backend = localBackend({ graceMs: GRACE_MS, env: lab.env() });
  const capabilities: CapabilityManifest = { ...backend.capabilities, 'replay-full': true, 'replay-tail': false };
  return lab.track(defineSandbox({ ...backend, capabilities, replayBytes: Infinity }));
}

/**
 * A correct text-only adapter of background commands (`binary-output: false`): the local adapter
 * whose background Processes decode each stream with one WHATWG decoder, as a text wire would.
 */
export function textOnlyBackground(lab: Lab): Sandbox {
  const encoder = new TextEncoder();
  const asText = (inner: BackgroundProcess): ReturnType<typeof chunksOf> => {
    const decoders = { stdout: new TextDecoder('utf-8'), stderr: new TextDecoder('utf-8') };
    async function* decoded(): AsyncGenerator<OutputChunk, undefined> {
      for await (const chunk of inner) {
        const data = encoder.encode(decoders[chunk.stream].decode(chunk.data, { stream: true }));
        if (data.byteLength > 0) yield { stream: chunk.stream, data };
      }
      for (const stream of ['stdout', 'stderr'] as const) {
        const data = encoder.encode(decoders[stream].decode());
        if (data.byteLength > 0) yield { stream, data };
      }
      return undefined;
    }
    return chunksOf(inner, decoded());
  };
  return wrapBackground(lab.local(), {
    capabilities: (inner) => ({ ...inner.capabilities, 'binary-output': false }),
    starter: { iterator: asText },
    attached: { iterator: asText },
  });
}

/** The state `commands()` gives for `id`, if listed. */
async function stateOf(sandbox: Sandbox, id: string): Promise<string | undefined> {
  return (await sandbox.commands!()).find((info) => info.commandId === id)?.state;
}

/**
 * Attaches twice in one tick, with and without replay: the second view's
 * `skipped` is where the first one's live output begins (the local runtime
 * subscribes synchronously). The second view is detached at once.
 */
async function withBoundary(inner: Sandbox, id: string): Promise<{ view: BackgroundProcess; boundary: Record<StreamName, number> }> {
  const pending = [inner.attach!(id), inner.attach!(id, { replay: false })] as const;
  const [view, marker] = await Promise.all(pending);
  const boundary = { ...marker.skipped! };
  await marker.detach();
  return { view, boundary };
}

/** The CommandInfo commands() lists when `id` is listed as ended, else undefined. */
async function endedInfo(inner: Sandbox, id: string): Promise<{ argv: readonly string[] } | undefined> {
  return (await inner.commands!()).find((info) => info.commandId === id && info.state === 'ended');
}

/** Chunks of `view` whose offset in their stream passes `keep`; `from` is where each stream's first chunk begins. */
async function* filtered(view: BackgroundProcess, from: Record<StreamName, number>, keep: (stream: StreamName, at: number, chunk: OutputChunk) => OutputChunk[]): AsyncGenerator<OutputChunk, undefined> {
  const at = { ...from };
  for await (const chunk of view) {
    const out = keep(chunk.stream, at[chunk.stream], chunk);
    at[chunk.stream] += chunk.data.byteLength;
    for (const piece of out) yield piece;
  }
  return undefined;
}

const MIB = 1024 * 1024;
const ATTACH_CASES = ['background.listed', 'background.detach', 'background.close', 'background.options', 'attach.unknown', 'attach.follow', 'attach.replay-tail', 'attach.ended', 'attach.dispose'];
const others = (...except: string[]): string[] => ATTACH_CASES.filter((id) => !except.includes(id));

export const backgroundAdapters: readonly BrokenAdapter[] = [
  {
    name: 'background-without-attach-runs',
    defect: 'without attach, stream() with background: true runs the command in the foreground instead of refusing',
    create: (lab) => wrapBackground(lab.local({ capabilities: { attach: false } }), { background: (inner, argv, options) => inner.stream(argv, omit(options, 'background')) as BackgroundProcess }),
    caughtBy: { 'capabilities.absent-attach': /without attach, stream\(\) with background: true must throw CapabilityNotSupported naming "attach" before any side effect; it returned a Process/ },
    stillPasses: ['capabilities.manifest'],
  },
  {
    name: 'commands-forget-detached',
    defect: 'commands() leaves out every command whose Process was detached, though it runs on',
    needs: 'attach',
    create(lab) {
      const detached = new Set<string>();
      const forget = { detach: async (inner: BackgroundProcess) => { await inner.detach(); if (inner.commandId !== undefined) detached.add(inner.commandId); } };
      return wrapBackground(lab.local(), {
        starter: forget,
        attached: forget,
        commands: async (inner) => (await inner.commands!()).filter((info) => !detached.has(info.commandId)),
      });
    },
    caughtBy: { 'background.listed': /once detach\(\) resolved, commands\(\) no longer lists the command/ },
    // attach.ended waits for the command's end in the list. attach.replay-tail is left out: it fails only
    // if its first look for burst 1 comes before the 3 MiB are written and so reads the list, a race that
    // a slow link (a testee beside a second test suite) loses the other way.
    alsoFails: ['background.detach', 'attach.ended', 'attach.dispose'],
    stillPasses: others('background.listed', 'background.detach', 'attach.ended', 'attach.dispose', 'attach.replay-tail'),
  },
  {
    name: 'detach-terminates',
    defect: 'detach() of the starting Process terminates the command instead of leaving it running',
    needs: 'attach',
    create: (lab) => wrapBackground(lab.local(), { starter: { detach: (inner) => inner[Symbol.asyncDispose]() } }),
    caughtBy: { 'background.detach': /once detach\(\) resolved, the command must run on: the command itself \(pid [0-9]+\) is gone/ },
    alsoFails: ['background.listed', 'background.close', 'attach.replay-tail', 'attach.ended', 'attach.dispose'],
    stillPasses: ['background.options', 'attach.unknown', 'attach.follow'],
  },
  {
    name: 'background-dispose-detaches',
    defect: 'disposing the starting Process of a background command detaches it instead of terminating it',
    needs: 'attach',
    create: (lab) => wrapBackground(lab.local(), { starter: { dispose: (inner) => inner.detach() } }),
    caughtBy: { 'background.detach': /disposing a background Process that was not detached resolved while its command still runs/ },
    stillPasses: others('background.detach'),
  },
  {
    name: 'background-survives-close',
    defect: "background commands run in a second sandbox that the first one's close() leaves alone",
    needs: 'attach',
    create(lab) {
      const hidden = lab.local();
      return wrapBackground(lab.local(), {
        background: (_inner, argv, options) => hidden.stream(argv, { ...options, background: true }),
        attach: (_inner, id, options) => hidden.attach!(id, options),
        commands: () => hidden.commands!(),
      });
    },
    caughtBy: { 'background.close': /close\(\) resolved while an undetached background Process still runs/ },
    stillPasses: others('background.close'),
  },
  {
    name: 'background-accepts-timeout',
    defect: 'stream() with background: true drops a timeout instead of refusing it',
    needs: 'attach',
    create: (lab) =>
      wrapBackground(lab.local(), { background: (inner, argv, options) => inner.stream(argv, { ...omit(options, 'timeout'), background: true }) }),
    caughtBy: { 'background.options': /with background: true and timeout must throw InvalidArgument \(options\.background\) before any side effect; it returned a Process/ },
    stillPasses: others('background.options'),
  },
  {
    name: 'attach-unknown-starts',
    defect: 'attach() of an id no command has starts a background command under that name instead of rejecting',
    needs: 'attach',
    create: (lab) =>
      wrapBackground(lab.local(), {
        async attach(inner, id, options) {
          try {
            return await inner.attach!(id, options);
          } catch (error) {
            if (!(error instanceof CommandNotFound)) throw error;
            return inner.stream(['sh', '-c', 'while :; do sleep 0.05; done', 'sh', id], { background: true });
          }
        },
      }),
    caughtBy: { 'attach.unknown': /of an id no background command has must reject with CommandNotFound; it resolved with a Process/ },
    alsoFails: ['background.listed', 'attach.ended', 'attach.dispose'],
    stillPasses: ['background.detach', 'background.options', 'attach.follow', 'attach.replay-tail'],
  },
  {
    name: 'attach-duplicates-boundary',
    defect: 'attach() with { replay: false } starts at the last chunk written before it, so that chunk is delivered although it came before',
    needs: 'attach',
    create: (lab) =>
      wrapBackground(lab.local(), {
        async attach(inner, id, options) {
          if (options?.replay !== false) return inner.attach!(id, options);
          const { view, boundary } = await withBoundary(inner, id);
          const last: Partial<Record<StreamName, OutputChunk>> = {};
          const chunks = filtered(view, { ...view.skipped! }, (stream, at, chunk) => {
            if (at + chunk.data.byteLength <= boundary[stream]) {
              last[stream] = chunk;
              return [];
            }
            const before = last[stream];
            delete last[stream];
            return before === undefined ? [chunk] : [before, chunk];
          });
          return wrapView(view, boundary, chunks);
        },
      }),
    // Block headers share their first digits, so where the bytes first differ depends on the chunk size.
    caughtBy: {
      'attach.follow': /attach\(\) with \{ replay: false \}, stdout: delivered [0-9]+ bytes with skipped [0-9]+; .* differ at delivered byte [0-9]+ \(the first bytes delivered are those at offset [0-9]+ of the stream\)/,
    },
    stillPasses: others('attach.follow'),
  },
  {
    name: 'attach-stalls',
    defect: 'attach() with { replay: false } gives a Process that delivers every chunk, then never its end',
    needs: 'attach',
    create: (lab) =>
      wrapBackground(lab.local(), {
        async attach(inner, id, options) {
          const view = await inner.attach!(id, options);
          if (options?.replay !== false) return view;
          async function* stalled(): AsyncGenerator<OutputChunk, undefined> {
            for await (const chunk of view) yield chunk;
            await new Promise<never>(() => undefined);
          }
          return wrapView(view, { ...view.skipped! }, stalled());
        },
      }),
    // Caught within the kit's stall bound once the command created its `ending` marker, not at the case's limit.
    caughtBy: { 'attach.follow': /attach\(\) with \{ replay: false \}: nothing more arrived within [0-9]+ ms, though the command had written it/ },
    stillPasses: others('attach.follow'),
  },
  {
    name: 'replay-skips-silently',
    defect: 'under replay-full, attach() replays only the last MiB of each stream and still says skipped is 0',
    needs: 'attach',
    create: (lab) =>
      wrapBackground(unboundedReplay(lab), {
        async attach(inner, id, options) {
          if (options?.replay === false) return inner.attach!(id, options);
          const { view, boundary } = await withBoundary(inner, id);
          const chunks = filtered(view, { stdout: 0, stderr: 0 }, (stream, at, chunk) => {
            const start = boundary[stream] - MIB;
            if (at + chunk.data.byteLength <= start) return [];
            return [at >= start ? chunk : { stream, data: chunk.data.subarray(start - at) }];
          });
          return wrapView(view, view.skipped!, chunks);
        },
      }),
    caughtBy: { 'attach.replay-full': /under replay-full|stdout: delivered [0-9]+ bytes with skipped 0; expected the [0-9]+ bytes of the stream from offset 0/ },
    stillPasses: ['attach.follow', 'attach.ended', 'attach.dispose', 'background.listed'],
  },
  {
    name: 'tail-miscounts',
    defect: 'under replay-tail, skipped counts 4096 bytes more than the replay left out',
    needs: 'replay-tail',
    create: (lab) =>
      wrapBackground(lab.local(), {
        async attach(inner, id, options) {
          const view = await inner.attach!(id, options);
          // Only while the command runs: the count of a live tail is the one kept wrong.
          const counted = view.skipped;
          const skipped = counted === undefined || view.exited ? counted : { ...counted, stdout: counted.stdout + 4096 };
          return new WrappedView(view, { skipped: () => skipped });
        },
      }),
    caughtBy: { 'attach.replay-tail': /stdout: delivered [0-9]+ bytes with skipped 4096; expected the [0-9]+ bytes of the stream from offset 4096/ },
    alsoFails: ['attach.follow'],
    stillPasses: ['attach.ended', 'attach.dispose', 'background.listed', 'attach.unknown'],
  },
  {
    name: 'ended-forgotten',
    defect: 'a background command is forgotten when it ends: commands() drops it and attach() says CommandNotFound',
    needs: 'attach',
    create: (lab) =>
      wrapBackground(lab.local(), {
        async attach(inner, id, options) {
          if ((await stateOf(inner, id)) === 'ended') throw new CommandNotFound(id);
          return inner.attach!(id, options);
        },
        commands: async (inner) => (await inner.commands!()).filter((info) => info.state !== 'ended'),
      }),
    caughtBy: { 'attach.ended': /commands\(\) stopped listing the command .* once it ended/ },
    stillPasses: others('attach.ended'),
  },
  {
    name: 'attached-dispose-detaches',
    defect: 'disposing a Process that attach() gave detaches it instead of terminating the command',
    needs: 'attach',
    create: (lab) => wrapBackground(lab.local(), { attached: { dispose: (inner) => inner.detach() } }),
    caughtBy: { 'attach.dispose': /disposing an attached Process that was not detached resolved while the command still runs/ },
    stillPasses: others('attach.dispose', 'attach.ended'),
  },
  {
    name: 'reattach-reruns',
    defect: 'attach() of an ended command starts its argv again and gives the new run',
    needs: 'attach',
    create: (lab) =>
      wrapBackground(lab.local(), {
        async attach(inner, id, options) {
          const info = await endedInfo(inner, id);
          return info === undefined ? inner.attach!(id, options) : inner.stream(info.argv, { background: true });
        },
      }),
    caughtBy: { 'attach.ended': /a command that exited 3 was started [2-9] times \(its start counter holds [2-9] lines\)/ },
    stillPasses: others('attach.ended'),
  },
];

/** A BackgroundProcess over `view` that delivers `chunks` and states `skipped`. */
function wrapView(view: BackgroundProcess, skipped: Record<StreamName, number>, chunks: AsyncGenerator<OutputChunk, undefined>): BackgroundProcess {
  let iterated = false;
  return new WrappedView(view, {
    skipped: () => skipped,
    iterator() {
      if (iterated) throw new InvalidState('a Process can be iterated only once');
      iterated = true;
      return chunksOf(view, chunks);
    },
  });
}
