// The one retry policy: bounded by tries and by a deadline, jittered, and
// the service's Retry-After obeyed. Time is real but every wait is a few ms.
import { describe, expect, it } from 'vitest';
import { backoffMs, parseRetryAfter, retry, type RetryPolicy } from '../src/index.js';

const quick: RetryPolicy = { attempts: 4, baseMs: 1, capMs: 4, jitter: 0 };

function failing(times: number, error: unknown = new Error('busy')) {
  let calls = 0;
  return {
    get calls() {
      return calls;
    },
    attempt: async () => {
      calls += 1;
      if (calls <= times) throw error;
      return calls;
    },
  };
}

describe('retry', () => {
  it('repeats until the request passes', async () => {
    const f = failing(2);
    expect(await retry(quick, f.attempt)).toBe(3);
  });
  it('stops after the tries and rejects with the last failure', async () => {
    const f = failing(10);
    await expect(retry(quick, f.attempt)).rejects.toThrow('busy');
    expect(f.calls).toBe(4);
  });
  it('does not repeat what is not retryable', async () => {
    const f = failing(10);
    await expect(retry(quick, f.attempt, { retryable: () => false })).rejects.toThrow('busy');
    expect(f.calls).toBe(1);
  });
  it('stops at the deadline rather than waiting past it', async () => {
    const f = failing(10);
    await expect(retry({ attempts: 100, baseMs: 1_000, capMs: 1_000, jitter: 0, deadlineMs: 50 }, f.attempt)).rejects.toThrow('busy');
    expect(f.calls).toBe(1);
  });
  it("takes the service's Retry-After in place of its own wait", async () => {
    const f = failing(1);
    const asked: number[] = [];
    await retry({ attempts: 2, baseMs: 60_000, capMs: 60_000, jitter: 0 }, f.attempt, {
      retryAfterMs: () => {
        asked.push(1);
        return 1;
      },
    });
    expect(asked).toEqual([1]);
  });
  it('gives up when the Retry-After lies past the deadline', async () => {
    const f = failing(1);
    await expect(retry({ attempts: 5, baseMs: 1, capMs: 1, jitter: 0, deadlineMs: 100 }, f.attempt, { retryAfterMs: () => 10_000 })).rejects.toThrow();
    expect(f.calls).toBe(1);
  });
  it('tells each try how much time is left', async () => {
    const seen: number[] = [];
    await retry({ attempts: 1, baseMs: 1, capMs: 1, jitter: 0, deadlineMs: 5_000 }, async ({ remainingMs }) => void seen.push(remainingMs));
    expect(seen[0]).toBeGreaterThan(4_000);
    expect(seen[0]).toBeLessThanOrEqual(5_000);
  });
  it('rejects at once when aborted', async () => {
    const abort = new AbortController();
    abort.abort(new Error('stop'));
    await expect(retry(quick, failing(0).attempt, { signal: abort.signal })).rejects.toThrow('stop');
  });
});

describe('backoffMs', () => {
  it('doubles from the base to the cap, jitter taking up to its share', () => {
    const policy: RetryPolicy = { attempts: 10, baseMs: 50, capMs: 300, jitter: 0.5 };
    expect([0, 1, 2, 3].map((n) => backoffMs(policy, n, () => 0.999999))).toEqual([50, 100, 200, 300].map((v) => expect.closeTo(v, 3)));
    expect([0, 1, 2, 3].map((n) => backoffMs(policy, n, () => 0))).toEqual([25, 50, 100, 150]);
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP dates', () => {
    expect(parseRetryAfter('2')).toBe(2_000);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
    expect(parseRetryAfter(undefined)).toBeUndefined();
    expect(parseRetryAfter('soon')).toBeUndefined();
  });
});
