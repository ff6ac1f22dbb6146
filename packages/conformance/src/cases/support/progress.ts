/**
 * A progress count a command records as it goes, read again and again by
 * a case: how long it has stood still, judged against the longest it ever
 * took to advance, so a slow sandbox is never taken for a stuck one.
 */
export class Progress {
  #previous = -1;
  #changedAt = performance.now();
  #slowestAdvance = 0;

  /** Records a reading; returns how long the count has stood still (0 when it just moved). */
  see(value: number, now = performance.now()): number {
    if (value !== this.#previous) {
      if (this.#previous >= 0) this.#slowestAdvance = Math.max(this.#slowestAdvance, now - this.#changedAt);
      this.#previous = value;
      this.#changedAt = now;
    }
    return now - this.#changedAt;
  }

  /** Whether standing still for `stillFor` is at least `atLeast` and four times the slowest advance. */
  stuck(stillFor: number, atLeast: number): boolean {
    return stillFor >= Math.max(atLeast, 4 * this.#slowestAdvance);
  }
}
