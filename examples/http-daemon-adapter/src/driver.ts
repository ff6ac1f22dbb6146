import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { SpawnFailed, StdinClosed, TransportError, type Signal } from '@sandstream/types';
import type { CommandSpec, DriverEvents, ExitStatus, ProcessDriver, StartedProcess } from '@sandstream/types/runtime';
import type { CommandEvent, StartRequest } from './protocol.js';

// #region call
/**
 * One request to the daemon; resolves with the status code. A request
 * that fails on the way (refused, reset) rejects with `TransportError`:
 * whether the daemon acted on it is unknown, so it is never retried.
 */
function call(daemon: URL, method: string, path: string, body?: Uint8Array | string): Promise<number> {
  return new Promise((resolve, reject) => {
    const outgoing = request(new URL(path, daemon), { method }, (response) => {
      response.resume(); // the status is the answer; the body is not needed
      response.once('end', () => resolve(response.statusCode ?? 0));
      response.once('error', (error) => reject(new TransportError(`${method} ${path}: ${error.message}`, { cause: error })));
    });
    outgoing.once('error', (error) => reject(new TransportError(`${method} ${path}: ${error.message}`, { cause: error })));
    outgoing.end(body);
  });
}

function expect204(status: number, what: string): void {
  if (status !== 204) throw new TransportError(`${what}: the daemon answered ${status}`);
}
// #endregion call

/** Drives one command on the daemon. */
export class HttpDriver implements ProcessDriver {
  /** The daemon's id of the command, once it started. */
  #id: string | undefined;
  /** The start request, and its answer: the event stream. Pausing that pauses the output. */
  #request: ClientRequest | undefined;
  #events: IncomingMessage | undefined;
  /** Set by the terminal event, a failed start, or release(): nothing is reported after it. */
  #ended = false;

  constructor(
    private readonly daemon: URL,
    private readonly command: CommandSpec,
  ) {}

  // #region driver-start
  start(events: DriverEvents): Promise<StartedProcess> {
    const body: StartRequest = {
      argv: this.command.argv,
      env: this.command.env,
      ...(this.command.cwd === undefined ? {} : { cwd: this.command.cwd }),
      stdin: this.command.stdin,
    };
    return new Promise((resolve, reject) => {
      let started = false;
      /** The link broke: before `started`, whether the command runs is unknown. */
      const lost = (reason: string, cause?: unknown): void => {
        const error = new TransportError(`lost the daemon: ${reason}`, { cause });
        if (!started) return reject(error); // a no-op once the start was settled
        if (this.#ended) return;
        this.#ended = true;
        events.fail(error);
      };
      const status = (event: { exitCode: number | null; signal: string | null }): ExitStatus => ({
        exitCode: event.exitCode,
        signal: event.signal,
      });
      const onEvent = (event: CommandEvent): void => {
        switch (event.type) {
          case 'started':
            started = true;
            this.#id = event.id;
            resolve({ pid: event.pid, commandId: event.id }); // the caller's proc.commandId
            return;
          case 'spawn-failed':
            this.#ended = true;
            reject(new SpawnFailed(this.command.argv, event.message));
            return;
          case 'output':
            events.output(event.stream, Buffer.from(event.data, 'base64'));
            return;
          case 'leader-exited':
            // The runtime now signals the tree; the daemon reports `exit` once it is gone.
            events.leaderExited(status(event));
            return;
          case 'exit':
            this.#ended = true;
            events.exit(status(event));
            return;
        }
      };

      const outgoing = (this.#request = request(new URL('/commands', this.daemon), { method: 'POST' }, (response) => {
        this.#events = response;
        if (response.statusCode !== 200) {
          response.resume();
          lost(`POST /commands answered ${response.statusCode}`);
          return;
        }
        let pending = '';
        response.setEncoding('utf8');
        response.on('data', (text: string) => {
          pending += text;
          for (let newline = pending.indexOf('\n'); newline >= 0; newline = pending.indexOf('\n')) {
            const line = pending.slice(0, newline);
            pending = pending.slice(newline + 1);
            onEvent(JSON.parse(line) as CommandEvent);
          }
        });
        response.once('end', () => lost('the event stream ended before the command did'));
        response.once('error', (error) => lost(error.message, error));
      }));
      outgoing.once('error', (error) => lost(error.message, error));
      outgoing.end(JSON.stringify(body));
    });
  }
  // #endregion driver-start

  // #region driver-stdin
  async writeStdin(data: Uint8Array): Promise<void> {
    const status = await call(this.daemon, 'POST', `/commands/${this.#id}/stdin`, data);
    if (status === 409) throw new StdinClosed('the command stopped reading standard input');
    expect204(status, 'writing standard input');
  }

  async closeStdin(): Promise<void> {
    expect204(await call(this.daemon, 'POST', `/commands/${this.#id}/stdin/end`), 'closing standard input');
  }
  // #endregion driver-stdin

  // #region driver-signal
  async signal(signal: Signal): Promise<void> {
    const body = JSON.stringify({ signal });
    expect204(await call(this.daemon, 'POST', `/commands/${this.#id}/signal`, body), `sending ${signal}`);
  }

  pause(): void {
    this.#events?.pause();
  }

  resume(): void {
    this.#events?.resume();
  }

  async release(): Promise<void> {
    // Also when the runtime gave up, perhaps while the start is pending:
    // a daemon whose client hangs up kills what the command started.
    this.#ended = true;
    this.#request?.destroy();
    this.#events?.destroy();
    if (this.#id !== undefined) await call(this.daemon, 'DELETE', `/commands/${this.#id}`);
  }
  // #endregion driver-signal
}
