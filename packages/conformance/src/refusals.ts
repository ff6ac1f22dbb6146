import type { Capability } from '@sandstream/types';

/**
 * The 1.2 capabilities whose absence refuses nothing (ADR-0036): without a replay capability an
 * attach follows only, and without `attach-reconnect` no other handle is promised anything. Their
 * absence is checked by the attach cases' rules for a follow-only attach; only `attach` refuses.
 */
export const NOTHING_REFUSED: readonly Capability[] = ['binary-output', 'attach-reconnect', 'replay-full', 'replay-tail'];
