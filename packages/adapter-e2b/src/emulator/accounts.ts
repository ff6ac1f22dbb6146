/**
 * The accounts envd runs commands as: the one named in a request's HTTP
 * Basic auth (`user:`), looked up in this machine's /etc/passwd.
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';

/** An account of this machine, from /etc/passwd. */
export interface Account {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
}

export function findAccount(name: string): Account | undefined {
  let passwd: string;
  try {
    passwd = readFileSync('/etc/passwd', 'utf8');
  } catch {
    return undefined;
  }
  for (const line of passwd.split('\n')) {
    const fields = line.split(':');
    if (fields[0] === name && fields.length >= 6) {
      return { name, uid: Number(fields[2]), gid: Number(fields[3]), home: fields[5]! };
    }
  }
  return undefined;
}

/** The account a request names in HTTP Basic auth (`user:`), as the SDK and envd use it. */
export function basicUser(req: IncomingMessage): string | undefined {
  const header = req.headers['authorization'];
  if (typeof header !== 'string' || !header.startsWith('Basic ')) return undefined;
  const decoded = Buffer.from(header.slice(6), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? decoded : decoded.slice(0, colon);
}

