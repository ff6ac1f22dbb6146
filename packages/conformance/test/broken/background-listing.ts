/**
 * Defects of what `commands()` lists and of `detach()` on a failed start
 * (spec 13.1, SS-BG-1 and SS-BG-2), each the local adapter with one: the two
 * behaviours the cases of spec 1.2 left unchecked.
 */
import { SpawnFailed, type CommandInfo, type Process, type Sandbox } from '@sandstream/types';
import type { BrokenAdapter } from './adapter.js';
import type { Lab } from './lab.js';
import { wrapBackground } from './wrap-background.js';

/** The cases of background commands these defects must leave passing, but for those that catch them. */
const NEIGHBOURS = ['background.listed', 'background.listed-only', 'background.detach', 'background.detach-failed-start', 'background.close', 'attach.unknown', 'attach.ended', 'attach.dispose'];
const neighbours = (...except: string[]): string[] => NEIGHBOURS.filter((id) => !except.includes(id));

/** The sandboxes of one lab whose lists the shared listing joins, until each is closed. */
const shared = new WeakMap<Lab, Set<Sandbox>>();

export const backgroundListingAdapters: readonly BrokenAdapter[] = [
  {
    name: 'commands-list-foreground',
    defect: 'commands() lists every command the sandbox runs, its running foreground commands too, as a process table would',
    needs: 'attach',
    create(lab) {
      const foreground = new Set<Process>();
      const sandbox = wrapBackground(lab.local(), {
        async commands(inner) {
          const running = [...foreground].filter((proc) => !proc.exited);
          const extra = running.map((proc): CommandInfo => ({ commandId: proc.commandId ?? proc.id, argv: proc.argv, state: 'running' }));
          return [...(await inner.commands!()), ...extra];
        },
      });
      const stream = sandbox.stream;
      sandbox.stream = ((argv, options) => {
        const proc = stream(argv, options);
        if (options?.background !== true) foreground.add(proc);
        return proc;
      }) as Sandbox['stream'];
      return sandbox;
    },
    caughtBy: { 'background.listed-only': /commands\(\) lists a running foreground command \(its argv carries [^)]*-foreground\)/ },
    stillPasses: neighbours('background.listed-only'),
  },
  {
    name: 'commands-list-every-sandbox',
    defect: "commands() lists the background commands of every sandbox the adapter made, which attach() then does not find",
    needs: 'attach',
    create(lab) {
      const sandboxes = shared.get(lab) ?? new Set<Sandbox>();
      shared.set(lab, sandboxes);
      const local = lab.local();
      sandboxes.add(local);
      return wrapBackground(local, {
        async commands(inner) {
          const own = await inner.commands!();
          // Another sandbox that was closed meanwhile lists nothing.
          const rest = await Promise.all([...sandboxes].filter((other) => other !== inner).map((other) => other.commands!().catch(() => [])));
          return [...own, ...rest.flat()];
        },
        async close(inner) {
          sandboxes.delete(inner);
          await inner.close();
        },
      });
    },
    caughtBy: { 'background.listed-only': /commands\(\) lists a background command of another sandbox of the adapter's factory/ },
    stillPasses: neighbours('background.listed-only'),
  },
  {
    name: 'detach-failed-start-resolves',
    defect: 'detach() of a background Process whose start failed resolves, as if it had released a running command, instead of rejecting as started() does',
    needs: 'attach',
    create: (lab) =>
      wrapBackground(lab.local(), {
        starter: {
          async detach(inner) {
            try {
              await inner.detach();
            } catch (error) {
              if (!(error instanceof SpawnFailed)) throw error;
            }
          },
        },
      }),
    caughtBy: { 'background.detach-failed-start': /detach\(\) called before started\(\) of a background command that cannot start rejected resolved; it must reject as started\(\) does/ },
    stillPasses: neighbours('background.detach-failed-start'),
  },
];
