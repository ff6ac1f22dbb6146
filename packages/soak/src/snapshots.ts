/**
 * Descriptors and active resources at one moment, and how two moments
 * differ: what the soak compares to say a run left nothing open.
 */
import { activeResources, fdCount, fdTargets } from './self-measures.js';

/** Descriptors and active resources at one moment. */
export interface ResourceSnapshot {
  readonly fds: number;
  /** What the descriptors point at, their numbers left out (`socket:`, `pipe:`, `anon_inode:[eventpoll]`, paths). */
  readonly fdKinds: Readonly<Record<string, number>>;
  readonly resources: Readonly<Record<string, number>>;
}

export function snapshot(): ResourceSnapshot {
  const fdKinds: Record<string, number> = {};
  for (const target of fdTargets()) fdKinds[target] = (fdKinds[target] ?? 0) + 1;
  return { fds: fdCount(), fdKinds, resources: activeResources() };
}

/** The descriptor kinds more numerous now than in `reference`. */
export function extraFds(now: ResourceSnapshot, reference: ResourceSnapshot): string {
  return Object.keys(now.fdKinds)
    .filter((kind) => (now.fdKinds[kind] ?? 0) > (reference.fdKinds[kind] ?? 0))
    .map((kind) => `${kind} ${reference.fdKinds[kind] ?? 0} -> ${now.fdKinds[kind]}`)
    .join(', ');
}

/**
 * Resource types whose count is above the reference. Requests in flight
 * (`FSReqCallback`, `CloseReq`, ...) are transient and not counted; handles
 * and timers are.
 */
export function excess(now: ResourceSnapshot, reference: ResourceSnapshot): string[] {
  return Object.keys(now.resources)
    .filter((type) => !/Req/.test(type) && (now.resources[type] ?? 0) > (reference.resources[type] ?? 0))
    .map((type) => `${type} ${reference.resources[type] ?? 0} -> ${now.resources[type]}`);
}

/** Every resource type whose count changed from `base`, signed. */
export function resourceDelta(now: ResourceSnapshot, base: ResourceSnapshot): string {
  const types = new Set([...Object.keys(now.resources), ...Object.keys(base.resources)]);
  const changes = [...types]
    .map((t) => [t, (now.resources[t] ?? 0) - (base.resources[t] ?? 0)] as const)
    .filter(([, d]) => d !== 0)
    .map(([t, d]) => `${t} ${d > 0 ? '+' : ''}${d}`);
  return changes.length === 0 ? 'none' : changes.join(', ');
}
