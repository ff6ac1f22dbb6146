/**
 * A seeded pseudo-random generator: the whole plan of a soak run derives from
 * one seed, so a run that found a bug can be repeated exactly. Nothing in this
 * package uses `Math.random`.
 */

/** 32-bit FNV-1a over the parts, as a seed mixer: (seed, index) pairs that differ give unrelated streams. */
function mix(...parts: readonly number[]): number {
  let hash = 0x811c9dc5;
  for (const part of parts) {
    for (let shift = 0; shift < 32; shift += 8) {
      hash ^= (part >>> shift) & 0xff;
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
  }
  return hash;
}

/** A mulberry32 generator with the helpers a plan needs. */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** The generator of process `index` in the run of `seed`: a pure function of both. */
  static of(seed: number, index: number): Rng {
    return new Rng(mix(seed, Math.floor(seed / 2 ** 32), index, 0x5eed));
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** An integer in [min, max], log-uniformly: small values as likely per decade as large ones. */
  logInt(min: number, max: number): number {
    return Math.min(max, Math.floor(Math.exp(Math.log(min) + this.next() * (Math.log(max + 1) - Math.log(min)))));
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /** One element, uniformly. */
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** One key, with probability proportional to its weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = Object.entries(weights) as Array<[K, number]>;
    const total = entries.reduce((sum, [, w]) => sum + w, 0);
    let roll = this.next() * total;
    for (const [key, weight] of entries) {
      roll -= weight;
      if (roll < 0) return key;
    }
    return entries[entries.length - 1]![0];
  }

  /** `length` random bytes, every value possible. */
  bytes(length: number): Uint8Array {
    const out = new Uint8Array(length);
    for (let i = 0; i < length; i++) out[i] = Math.floor(this.next() * 256);
    return out;
  }

  /** `length` characters of `alphabet`. */
  text(length: number, alphabet: readonly string[]): string {
    let out = '';
    for (let i = 0; i < length; i++) out += this.pick(alphabet);
    return out;
  }
}
