/**
 * A real interactive client over a Process: the stdio MCP "everything"
 * server driven by the MCP client SDK, through stream() with a stdin writer
 * and stderr flowing alongside stdout (the session every adapter runs).
 */
import { describeMcpSession } from '@sandstream/test-support/mcp-session';
import { testSandbox } from './helpers.js';

describeMcpSession(testSandbox);
