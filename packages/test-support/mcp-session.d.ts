import type { Sandbox } from '@sandstream/types';

/**
 * Defines the stdio MCP session tests (initialize, tools, echo while wait()
 * is pending, 100 concurrent calls, teardown by disposal) against sandboxes
 * from `openSandbox`, which must have the `stdin` capability.
 */
export declare function describeMcpSession(openSandbox: () => Sandbox | Promise<Sandbox>): void;
