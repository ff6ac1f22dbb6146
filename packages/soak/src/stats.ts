/** Percentiles of a sample, by the nearest-rank method. */

/** p50, p99 and max of a sample (all 0 for an empty one). */
export interface Percentiles {
  readonly count: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

/** The value at or below which `p` percent of the sorted sample lies (nearest rank). */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(sorted.length, rank) - 1]!;
}

/** p50, p99 and max of `values`. */
export function percentiles(values: ArrayLike<number>): Percentiles {
  const sorted = Float64Array.from(values).sort();
  return {
    count: sorted.length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted.length === 0 ? 0 : sorted[sorted.length - 1]!,
  };
}

/**
 * A sample of non-negative values in 0.1 ms buckets up to 60 s (one count
 * per bucket, fixed size), for samples that grow with the run's length.
 */
export class Histogram {
  private static readonly RESOLUTION = 10;
  private readonly buckets = new Uint32Array(60_000 * Histogram.RESOLUTION + 1);
  private n = 0;
  private highest = 0;

  record(value: number): void {
    const bucket = Math.min(this.buckets.length - 1, Math.max(0, Math.round(value * Histogram.RESOLUTION)));
    this.buckets[bucket]!++;
    this.n++;
    if (value > this.highest) this.highest = value;
  }

  get count(): number {
    return this.n;
  }

  percentile(p: number): number {
    if (this.n === 0) return 0;
    const rank = Math.max(1, Math.ceil((p / 100) * this.n));
    let seen = 0;
    for (let i = 0; i < this.buckets.length; i++) {
      seen += this.buckets[i]!;
      if (seen >= rank) return i / Histogram.RESOLUTION;
    }
    return this.highest;
  }

  summary(): Percentiles {
    return { count: this.n, p50: this.percentile(50), p99: this.percentile(99), max: this.highest };
  }
}
