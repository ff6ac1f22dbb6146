/**
 * The plan of a soak run: which behaviour and which ending process `index`
 * gets, with every size and delay, as a pure function of the seed and the
 * index. The digest of a run's plan proves two runs did the same thing.
 */
import { createHash } from 'node:crypto';
import { hasCapability, type CapabilityManifest } from '@sandstream/types';
import { BEHAVIOURS, companionScript, planCommand, type BehaviourName, type CommandPlan } from './behaviours.js';
import { BACKGROUND_ENDINGS, ENDINGS, planEnding, readsToEnd, type EndingName, type EndingPlan } from './endings.js';
import { Rng } from './random.js';

/** What the adapter under test supports, as far as the plan cares. */
export interface PlanCapabilities {
  /** `binary-output`: arbitrary bytes; otherwise every stream is planned as valid UTF-8. */
  readonly binary: boolean;
  /** `stdin`: commands may read standard input. */
  readonly stdin: boolean;
  /**
   * `attach` (spec 1.2): commands may be started in the background and ended
   * by the endings of {@link BACKGROUND_ENDINGS}. Without it the plan is
   * exactly that of a target before 1.2, so its seeds reproduce.
   */
  readonly attach: boolean;
  /**
   * `pty` (spec 1.5): commands may run on a terminal (the `on-terminal`
   * behaviour). Without it the plan is exactly that of a target before 1.5.
   */
  readonly pty?: boolean;
}

/** What the plan cares about of a sandbox's manifest. */
export function planCapabilities(manifest: Readonly<CapabilityManifest>): PlanCapabilities {
  return {
    binary: hasCapability(manifest, 'binary-output'),
    stdin: hasCapability(manifest, 'stdin'),
    attach: hasCapability(manifest, 'attach'),
    pty: hasCapability(manifest, 'pty'),
  };
}

/** The plan of one process. */
export interface ProcessPlan {
  readonly index: number;
  readonly command: CommandPlan;
  readonly ending: EndingPlan;
  /** Largest piece standard input is written in. */
  readonly stdinPiece: number;
}

/** The behaviours a target with these capabilities gets. */
export function behavioursFor(capabilities: PlanCapabilities): BehaviourName[] {
  return BEHAVIOURS.filter(
    (b) => (b !== 'binary-output' || capabilities.binary) && (b !== 'reads-stdin' || capabilities.stdin) && (b !== 'on-terminal' || capabilities.pty === true),
  );
}

/** The endings a target with these capabilities gets. */
export function endingsFor(capabilities: PlanCapabilities): EndingName[] {
  return ENDINGS.filter((e) => capabilities.attach || !(BACKGROUND_ENDINGS as readonly string[]).includes(e));
}

/** Plans process `index` of the run of `seed`. */
export function planProcess(seed: number, index: number, capabilities: PlanCapabilities): ProcessPlan {
  const rng = Rng.of(seed, index);
  const behaviour = rng.pick(behavioursFor(capabilities));
  // A background command's standard input is at end-of-file: one that reads it gets the endings of 1.1 only.
  const ending = planEnding(rng, companionScript, capabilities.attach && behaviour !== 'reads-stdin');
  // A command whose owner is killed always lingers: its tree must still be there to be seen going.
  const lingers = !readsToEnd(ending) && (ending.kind === 'owner-killed' || rng.chance(0.6));
  const piece = rng.logInt(1, 64 * 1024);
  const command = planCommand(behaviour, rng, { binary: capabilities.binary, lingers });
  // At most 64 writes a command: each awaited write is a round trip to a remote backend.
  const stdinPiece = Math.max(piece, Math.ceil((command.stdin?.byteLength ?? 0) / 64));
  return { index, command, ending, stdinPiece };
}

/** One line per process, hashed: the digest of `count` processes of the run of `seed`. */
export function planDigest(seed: number, count: number, capabilities: PlanCapabilities): string {
  const digest = createHash('sha256');
  for (let index = 0; index < count; index++) {
    const plan = planProcess(seed, index, capabilities);
    const script = createHash('sha256').update(plan.command.script).digest('hex').slice(0, 16);
    digest.update(
      `${index} ${plan.command.behaviour} ${JSON.stringify(plan.ending)} ${plan.command.lingers} ${plan.stdinPiece} ${script} ${JSON.stringify(plan.command.parameters)}\n`,
    );
  }
  return digest.digest('hex').slice(0, 16);
}
