/**
 * Why each failure happens, written by hand from the vendors' SDKs, the
 * services they stand for and what the kit saw. Keyed per vendor by a case
 * id, a requirement id (`SS-TEAR-7`) or a requirement family (`SS-TEAR`);
 * a failing case takes the most specific key it has (its id, then each of
 * its requirement ids in order, then each of their families). The page
 * refuses a failing case no key explains, and an entry no failing case uses
 * (it would explain something that no longer happens).
 */
export type Explanations = Readonly<Record<string, Readonly<Record<string, string>>>>;

const SIGKILL_ONLY =
  "the SDK's only signal call, `kill()`, is SIGKILL, so no command ever sees SIGTERM first and has no grace period to end in";

const NO_DOCKER_SIGNAL =
  "no signal reaches the command: the Engine API has no call that signals an exec'd process ([moby/moby#9098](https://github.com/moby/moby/issues/9098)), and every signal of the wrapper only drops the attach connection, which the process never sees";

const NO_BOUND =
  'no bound to state: nothing of the SDK ends a command once its owner is gone (SS-OWNER-1), so the wrapper states no `termination.ownerLossMs`: a sandbox of 1.3 at most';

export const EXPLANATIONS: Explanations = {
  e2b: {
    'SS-START':
      'a program that cannot start still runs as a shell: the SDK starts `/bin/bash -l -c <line>`, which starts, so a missing program is exit 127 and never `SpawnFailed`',
    'SS-ID': 'same cause as SS-START: bash starts, so `started()` of a missing program resolves',
    'SS-WAIT': 'same cause as SS-START: bash starts, so `wait()` of a missing program resolves with exit 127',
    'SS-KILL':
      "signals cannot be chosen: every one becomes the SDK's `kill()`, SIGKILL to the pid envd started; SIGUSR1 never arrives, and SIGSTOP kills the leader and leaves its children running",
    'SS-ARGV':
      "one string for all of argv: the SDK takes a single command line and hands it to bash as one argument, which Linux caps at 128 KiB (`E2BIG`), where 500 separate arguments and one of 100 KB start",
    'SS-TEAR':
      "leader-only kill: envd's kill signals the pid it started, not its children, and envd ends the command only once its output pipes close, so what the command started lives on after every teardown, and a child holding the pipes keeps even a finished command open",
    'SS-TEAR-7': SIGKILL_ONLY,
    'SS-TERM': SIGKILL_ONLY,
    'SS-BYTES':
      'output decoded as UTF-8: the SDK hands `onStdout`/`onStderr` strings (a `TextDecoder` per stream), so every invalid byte arrives as U+FFFD and re-encoding cannot restore it',
    'SS-STDIN-1': 'the input arrives, but what `cat` echoes of it is output, decoded as SS-BYTES says',
    'SS-STDIN-2': 'the input arrives, but what `cat` echoes of it is output, decoded as SS-BYTES says',
    'SS-STDIN-5':
      "the SDK's errors are not the contract's: a write to a command that closed its stdin fails with envd's `EPIPE` as a generic SDK error, which the runtime can only report as `TransportError`, not `StdinClosed`",
    'SS-RESULT':
      'exit codes invented: envd reports a death by a signal as exit code -1 (the signal is only in a status text the SDK drops), which no result may carry',
    'SS-ONOUT':
      "teardown is SIGKILL only: the command's SIGTERM handler never runs, so what it writes on its way out never comes",
    'SS-USER':
      "with no directory given, envd starts a command in its account's home and refuses when that home does not exist (`nobody`'s is `/nonexistent`); the SDK sends none of its own, where adapter-e2b starts such a command in `/` and moves to `$HOME` if it can",
    'SS-OWNER-1':
      "nothing outlives the owner to end its command: envd runs a process it started until it ends or is signalled, and when the owner dies the connection of the process's event stream goes with it, which envd takes for a reader gone, not for an end; the SDK has no lease or keepalive that would tell it more, so the whole tree (leader, foreground and background child) runs on past the bound, without SIGTERM",
    'SS-OWNER-2': NO_BOUND,
  },
  vercel: {
    'SS-START':
      "a failed start is the SDK's `APIError` (HTTP 400), which the runtime can only report as `TransportError`, not `SpawnFailed`",
    'start.eager':
      'leader-only kill, and no end after it: the kill reaches the leader, while its children keep the output pipes, and the log stream (so `wait()`) ends only when nothing holds them; the runtime gives up with `TransportError`',
    'SS-ID': 'same cause as SS-START: the failed start is an `APIError`, not `SpawnFailed`',
    'SS-WAIT': 'same cause as SS-START: the failed start is an `APIError`, not `SpawnFailed`',
    'SS-KILL':
      "the SDK knows seven signal names (SIGHUP, SIGINT, SIGQUIT, SIGKILL, SIGTERM, SIGCONT, SIGSTOP) and throws on SIGUSR1; and a signal reaches the command's leader only, so SIGSTOP leaves its children running",
    'SS-ENV':
      "the variable arrives whole, but its echo comes through the SDK's log reader (jsonlines 0.1.1), which decodes each network read on its own: a character split between two reads arrives as U+FFFD (where the reads split is chance, so the case can pass)",
    'SS-TEAR':
      'leader-only kill: `kill()` signals the pid the service started, not its children, which keep the output pipes; the log stream (so `wait()`) ends only when nothing holds them, so teardown gets no end and fails with `TransportError` or hangs',
    'SS-TERM':
      'signals reported as 128+n: the service reports a death by SIGKILL as exit code 137, and the SDK has no field for a signal',
    'SS-RESULT':
      'signals reported as 128+n: the service reports a death by SIGKILL as exit code 137, and the SDK has no field for a signal',
    'SS-ARGV':
      "the argument arrives whole, but its echo comes through the SDK's log reader (jsonlines 0.1.1), which decodes each network read on its own: a character split between two reads arrives as U+FFFD (where the reads split is chance, so the case can pass)",
    'SS-OWNER-1':
      "nothing outlives the owner to end its command: the service runs a command until it ends or is killed, and the owner's death only ends its request for the logs, which the service takes for a reader gone; the SDK has no lease or keepalive, so the whole tree (leader, foreground and background child) runs on past the bound, without SIGTERM",
    'SS-OWNER-2': NO_BOUND,
  },
  docker: {
    'SS-START-1':
      "a program that cannot start is not an error of the API: the Engine creates and starts the exec, writes the runtime's refusal (`OCI runtime exec failed: ... executable file not found`) as standard output, ends the stream, and exec inspect says exit 126; so `run()` resolves with that, never `SpawnFailed`",
    'SS-ID-1': 'same cause as SS-START-1: the start of a missing program succeeds, so `started()` resolves',
    'SS-WAIT-1': 'same cause as SS-START-1: `wait()` of a missing program resolves with exit 126',
    'SS-KILL-1': `${NO_DOCKER_SIGNAL}; SIGUSR1 never arrives, and SIGSTOP stops nothing`,
    'SS-TEAR':
      "a process started by `docker exec` outlives its client (moby/moby#9098): teardown can only drop the connection, the wrapper takes the stream's close for the end (exec inspect still says running, with no `ExitCode`), and the command, with everything it started, keeps running in the container",
    'SS-TEAR-7': `${NO_DOCKER_SIGNAL}; no SIGTERM comes first, so no handler runs in a grace period`,
    'SS-TEAR-10':
      "the end is reported while children run: the Engine ends an exec once the process it started exits (it closes the stream about 2 s later even while a child holds the output pipe), and no call of the API reaches that child",
    'SS-TERM-1': `${NO_DOCKER_SIGNAL}; the SIGTERM that termination begins with never arrives`,
    'SS-RESULT-2':
      'signals reported as 128+n: exec inspect has one number, `ExitCode`, and the Engine reports a death by SIGKILL as 137; it has no field for a signal',
    'SS-ONOUT-2': `${NO_DOCKER_SIGNAL}; the command's SIGTERM handler never runs, so what it writes on its way out never comes`,
    'SS-STDIN-5':
      "a write to a command that closed its standard input waits forever: once the exec's pipe has lost its reader, dockerd's copy stops on `EPIPE` and stops reading the connection, and nothing reports it (ADR-0035), where the contract wants `StdinClosed`",
    'SS-OWNER-1':
      "a process started by `docker exec` outlives its client ([moby/moby#9098](https://github.com/moby/moby/issues/9098)): the owner's death drops the attach connection, which the process never sees, and the Engine keeps the exec running, so the whole tree (leader, foreground and background child) runs on in the container past the bound, without SIGTERM",
    'SS-OWNER-2': NO_BOUND,
  },
};

/** The requirement family of an id: `SS-TEAR-7` is in `SS-TEAR`. */
/**
 * Explanations of failures that come and go by chance (where a network read
 * splits a character): a record in which the case passed leaves them unused,
 * and the page accepts that for these alone.
 */
export const BY_CHANCE: Readonly<Record<string, readonly string[]>> = {
  vercel: ['SS-ARGV', 'SS-ENV'],
};

export function familyOf(requirement: string): string {
  return requirement.replace(/-\d+$/, '');
}

/** The keys a failing case is explained by, most specific first. */
export function explanationKeys(caseId: string, requirements: readonly string[]): string[] {
  return [caseId, ...requirements, ...requirements.map(familyOf)];
}
