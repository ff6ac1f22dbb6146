// Reaching the emulator with the vendor's SDK, whose base URL is fixed: kept apart from the emulator
// itself, so a client loads none of it.

/**
 * The `fetch` that sends the SDK's requests (to its hard-coded base URL) to
 * the emulator at `url`, from this OS process or another.
 */
export function emulatorFetch(url: string): typeof globalThis.fetch {
  return (input, init) => {
    const original = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    const path = original.pathname.startsWith('/api/') ? original.pathname.slice(4) : original.pathname;
    // The SDK passes its own undici dispatcher and retry settings; neither belongs to this fetch.
    const { dispatcher: _dispatcher, ...rest } = (init ?? {}) as RequestInit & { dispatcher?: unknown };
    return globalThis.fetch(`${url}${path}${original.search}`, rest);
  };
}
