/**
 * The plan of a soak run: which behaviour and which ending process `index`
 * gets, with every size and delay, as a pure function of the seed and the
 * index. The digest of a run's plan proves two runs did the same thing.
 */
import { createHash } from 'node:crypto';
import { BEHAVIOURS, companionScript, planCommand, type BehaviourName, type CommandPlan } from './behaviours.js';
import { planEnding, readsToEnd, type EndingPlan } from './endings.js';
import { Rng } from './random.js';

/** What the adapter under test supports, as far as the plan cares. */
export interface PlanCapabilities {
  /** `binary-output`: arbitrary bytes; otherwise every stream is planned as valid UTF-8. */
  readonly binary: boolean;
  /** `stdin`: commands may read standard input. */
  readonly stdin: boolean;
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
    (b) => (b !== 'binary-output' || capabilities.binary) && (b !== 'reads-stdin' || capabilities.stdin),
  );
}

/** Plans process `index` of the run of `seed`. */
export function planProcess(seed: number, index: number, capabilities: PlanCapabilities): ProcessPlan {
  const rng = Rng.of(seed, index);
  const behaviour = rng.pick(behavioursFor(capabilities));
  const ending = planEnding(rng, companionScript);
  const lingers = !readsToEnd(ending) && rng.chance(0.6);
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
