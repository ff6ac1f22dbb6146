/**
 * The stdio MCP session through this adapter: the MCP "everything" server
 * runs in the emulated sandbox, driven by the MCP client SDK over stream()
 * with the emulator's standard input (seed 002's protocol) and stderr
 * flowing alongside stdout on the same log stream, while another task
 * awaits wait() the whole time.
 */
import { describeMcpSession } from '@sandstream/test-support/mcp-session';
import { testSandbox, useEmulator } from './helpers.js';

useEmulator();
describeMcpSession(testSandbox);
