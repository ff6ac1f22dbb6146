/**
 * The Vercel emulator's `fetch` (its `fetch` property), rebuilt on this side
 * of a process boundary: the SDK's requests go to its hard-coded base URL,
 * and are sent to the emulator instead, without the SDK's own dispatcher.
 * The soak's target and its owner processes both reach the emulator so.
 */
export function emulatorFetch(base: string): typeof globalThis.fetch {
  return (input, init) => {
    const original = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    const path = original.pathname.startsWith('/api/') ? original.pathname.slice(4) : original.pathname;
    const { dispatcher: _dispatcher, ...rest } = (init ?? {}) as RequestInit & { dispatcher?: unknown };
    return globalThis.fetch(`${base}${path}${original.search}`, rest);
  };
}
