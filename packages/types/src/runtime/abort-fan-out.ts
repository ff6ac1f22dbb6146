/**
 * One 'abort' listener per signal, fanned out to every command that shares
 * it: a caller passing one signal to many commands must not trip Node's
 * listener-leak warning.
 */
interface AbortFanOut {
  readonly subscribers: Set<() => void>;
  readonly listener: () => void;
}

const abortFanOuts = new WeakMap<AbortSignal, AbortFanOut>();

/**
 * Calls `callback` once when `signal` aborts. Returns the unsubscribe
 * function; once the last subscriber of a signal left, nothing stays
 * attached to it.
 */
export function onAbortOf(signal: AbortSignal, callback: () => void): () => void {
  let fanOut = abortFanOuts.get(signal);
  if (fanOut === undefined) {
    const subscribers = new Set<() => void>();
    const listener = (): void => {
      abortFanOuts.delete(signal);
      for (const subscriber of subscribers) subscriber();
    };
    fanOut = { subscribers, listener };
    abortFanOuts.set(signal, fanOut);
    signal.addEventListener('abort', listener, { once: true });
  }
  const { subscribers, listener } = fanOut;
  subscribers.add(callback);
  return () => {
    subscribers.delete(callback);
    if (subscribers.size === 0 && abortFanOuts.get(signal) === fanOut) {
      // The last command using this signal is done: leave nothing attached to it.
      abortFanOuts.delete(signal);
      signal.removeEventListener('abort', listener);
    }
  };
}
