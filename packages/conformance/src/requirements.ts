// Generated from spec/1.5/requirements.json and spec/1.5/spec.md by scripts/sync-requirements.mjs; do not edit.
// spec/1.5/spec.md is the source of each statement and heading; test/requirements.test.ts holds all three equal.
// Refresh with: npm run sync-requirements -w @sandstream/conformance

/** A numbered heading of spec.md: `### 9.8 The termination sequence` is `{ number: '9.8', title: 'The termination sequence' }`. */
export interface SpecHeading {
  /** The section number, without a trailing dot: `9.8`, `10`. */
  readonly number: string;
  /** The heading's words as spec.md writes them. */
  readonly title: string;
}

/** One requirement of the spec, as requirements.json states it, with the heading spec.md tags it under. */
export interface Requirement {
  readonly id: string;
  readonly level: 'MUST' | 'SHOULD';
  /** The section requirements.json files it under, in words (`stream()`); {@link Requirement.heading} is spec.md's own. */
  readonly section: string;
  /** The requirement's sentence in spec.md, up to its tag. */
  readonly statement: string;
  readonly introduced: string;
  /** The requirement applies only to an adapter that advertises this capability. */
  readonly capability?: string;
  /** The requirement applies only to an adapter that does not advertise this capability. */
  readonly without?: string;
  /**
   * `harness`: the requirement binds the kit and the testees it talks to (spec section 18),
   * not a Sandbox; the kit's own tests prove it, and no case does (spec sections 1 and 16).
   */
  readonly provedBy?: 'harness';
  /**
   * The numbered heading of spec.md under which the requirement's tag stands (the last one
   * before it). Derived from spec.md, not stated in requirements.json; a case's section is
   * the heading of its first requirement.
   */
  readonly heading: SpecHeading;
}

/** The spec revision these requirements belong to. */
export const REQUIREMENTS_SPEC_VERSION = "1.5";

/** Every requirement of the spec revision this kit checks. */
export const REQUIREMENTS: readonly Requirement[] = [
  {
    "id": "SS-STREAM-1",
    "level": "MUST",
    "section": "stream()",
    "statement": "`stream()` MUST return its Process synchronously, and the Process MUST NOT be thenable (it has no `then` member), so `await sb.stream(...)` cannot stand in for a scope.",
    "introduced": "1.0",
    "capability": "streaming",
    "heading": {
      "number": "6",
      "title": "stream() and the Process"
    }
  },
  {
    "id": "SS-STREAM-2",
    "level": "MUST",
    "section": "stream()",
    "statement": "A Process MUST be an async iterable of OutputChunks, each tagged `stdout` or `stderr` with its bytes as a `Uint8Array`, and MUST be iterable at most once; a second iteration MUST raise `InvalidState`.",
    "introduced": "1.0",
    "capability": "streaming",
    "heading": {
      "number": "6.2",
      "title": "Iteration"
    }
  },
  {
    "id": "SS-FLOW-1",
    "level": "MUST",
    "section": "Iteration",
    "statement": "Output left unread beyond the high-water mark MUST be delivered in full and in order once the reader reads it: pausing and resuming the backend MUST NOT lose, duplicate or reorder a byte.",
    "introduced": "1.1",
    "capability": "streaming",
    "heading": {
      "number": "6.2",
      "title": "Iteration"
    }
  },
  {
    "id": "SS-KILL-1",
    "level": "MUST",
    "section": "Process",
    "statement": "`Process.kill(signal)` MUST deliver the signal (`SIGTERM` when none is given) to the command's process tree and to no other command, MUST resolve without effect once the command has exited, and MUST reject a signal name the spec does not list with `InvalidArgument`.",
    "introduced": "1.0",
    "capability": "streaming",
    "heading": {
      "number": "2.2",
      "title": "Process"
    }
  },
  {
    "id": "SS-START-1",
    "level": "MUST",
    "section": "Start",
    "statement": "The command MUST be started by the `stream()` call itself, without waiting for iteration, `wait()` or disposal; a command that cannot be started MUST make iteration and `wait()` reject with `SpawnFailed`, and `run()` reject with it.",
    "introduced": "1.0",
    "heading": {
      "number": "6.1",
      "title": "Start"
    }
  },
  {
    "id": "SS-ID-1",
    "level": "MUST",
    "section": "Start",
    "statement": "Once `started()` has resolved, `commandId` MUST be a non-empty string that identifies the command, set without any of its output having been read, and MUST NOT change for the Process's life.",
    "introduced": "1.1",
    "capability": "streaming",
    "heading": {
      "number": "6.1",
      "title": "Start"
    }
  },
  {
    "id": "SS-START-2",
    "level": "MUST",
    "section": "Start",
    "statement": "An implementation MUST NOT start a command more than once for one `run()` or `stream()` call: a start whose outcome is unknown (the request may have reached the backend, and no answer came) MUST settle the command with `TransportError`, and MUST NOT be retried.",
    "introduced": "1.1",
    "heading": {
      "number": "6.1",
      "title": "Start"
    }
  },
  {
    "id": "SS-CAP-1",
    "level": "MUST",
    "section": "Capabilities",
    "statement": "An operation that needs a capability the sandbox does not advertise MUST raise `CapabilityNotSupported` naming that capability: thrown synchronously by `stream()`, a rejection of `run()`.",
    "introduced": "1.0",
    "heading": {
      "number": "4.2",
      "title": "The negative behaviour"
    }
  },
  {
    "id": "SS-CAP-2",
    "level": "MUST",
    "section": "Capabilities",
    "statement": "A capability error MUST be raised before any side effect in the sandbox: the command MUST NOT have started.",
    "introduced": "1.0",
    "heading": {
      "number": "4.2",
      "title": "The negative behaviour"
    }
  },
  {
    "id": "SS-CAP-3",
    "level": "MUST",
    "section": "Capabilities",
    "statement": "`sandbox.capabilities` MUST be a CapabilityManifest valid against the spec's schema and MUST NOT change during the sandbox's lifetime.",
    "introduced": "1.0",
    "heading": {
      "number": "4.1",
      "title": "The capabilities of 1.5"
    }
  },
  {
    "id": "SS-TERM-1",
    "level": "MUST",
    "section": "Sandbox",
    "statement": "A sandbox that states `termination` MUST terminate commands with exactly those settings: SIGKILL follows SIGTERM no sooner than `graceMs` after it (unless the command settled first) and within `graceMs` plus a bounded delay, and a command whose end is not reported within `killWaitMs` after SIGKILL settles with `TransportError`; the values MUST NOT change during the sandbox's lifetime.",
    "introduced": "1.1",
    "heading": {
      "number": "2.1",
      "title": "Sandbox"
    }
  },
  {
    "id": "SS-ARG-1",
    "level": "MUST",
    "section": "Arguments",
    "statement": "`argv` that is not an array of strings, is empty, has an empty first element or an element containing NUL MUST be rejected with `InvalidArgument` whose `key` names the offending element, before any side effect.",
    "introduced": "1.0",
    "heading": {
      "number": "3.1",
      "title": "argv"
    }
  },
  {
    "id": "SS-ARG-2",
    "level": "MUST",
    "section": "Arguments",
    "statement": "An unknown option key, or an option of the wrong type or range, MUST be rejected with `InvalidArgument` whose `key` names the option, before any side effect.",
    "introduced": "1.0",
    "heading": {
      "number": "3.2",
      "title": "Options"
    }
  },
  {
    "id": "SS-ARGV-1",
    "level": "MUST",
    "section": "Arguments",
    "statement": "Each argv element MUST reach the command byte-exact as one argument, with no shell interpretation (quotes, `$(...)`, backticks, globs, newlines, leading dashes, empty strings and non-ASCII text are passed through unchanged).",
    "introduced": "1.0",
    "heading": {
      "number": "3.1",
      "title": "argv"
    }
  },
  {
    "id": "SS-ENV-1",
    "level": "MUST",
    "section": "Environment",
    "statement": "Variables in `env` MUST be visible to the command, overriding same-named base variables, and `cwd` MUST be its working directory.",
    "introduced": "1.0",
    "heading": {
      "number": "3.3",
      "title": "Environment and working directory"
    }
  },
  {
    "id": "SS-TEAR-1",
    "level": "MUST",
    "section": "Teardown",
    "statement": "Disposing a Process (`await using` scope exit or an explicit `[Symbol.asyncDispose]()`) whose command is still running MUST terminate the command, and the returned promise MUST NOT resolve before it is gone.",
    "introduced": "1.0",
    "capability": "streaming",
    "heading": {
      "number": "9.2",
      "title": "Disposal"
    }
  },
  {
    "id": "SS-TEAR-2",
    "level": "MUST",
    "section": "Teardown",
    "statement": "Leaving a `for await` loop over a Process early, by `break`, `return` or a thrown exception, MUST terminate the command before control leaves the loop.",
    "introduced": "1.0",
    "capability": "streaming",
    "heading": {
      "number": "9.3",
      "title": "Leaving a loop"
    }
  },
  {
    "id": "SS-TEAR-3",
    "level": "MUST",
    "section": "Teardown",
    "statement": "When the caller's AbortSignal fires, the command MUST be terminated and `run()`, `wait()` and iteration MUST reject with `AbortError` carrying the partial result; an already-aborted signal MUST start nothing.",
    "introduced": "1.0",
    "heading": {
      "number": "9.4",
      "title": "AbortSignal"
    }
  },
  {
    "id": "SS-TEAR-4",
    "level": "MUST",
    "section": "Timeout",
    "statement": "When `timeout` elapses, the command MUST be terminated and its result MUST have `timedOut: true`, keeping the output produced before (captured by `run()`, delivered to the iterator by `stream()`).",
    "introduced": "1.0",
    "heading": {
      "number": "9.5",
      "title": "Timeout"
    }
  },
  {
    "id": "SS-TEAR-5",
    "level": "MUST",
    "section": "Teardown",
    "statement": "`Sandbox.close()` MUST terminate every process the sandbox started, including Processes never iterated nor disposed, before it resolves; afterwards `run()` and `stream()` MUST raise `SandboxClosed`.",
    "introduced": "1.0",
    "heading": {
      "number": "9.6",
      "title": "Sandbox.close()"
    }
  },
  {
    "id": "SS-TEAR-6",
    "level": "MUST",
    "section": "Teardown",
    "statement": "Termination MUST reach everything the command started (its process tree, background children included), and so MUST the end of a command whose leader exits by itself: nothing it started may outlive its result.",
    "introduced": "1.0",
    "heading": {
      "number": "9.7",
      "title": "The process tree"
    }
  },
  {
    "id": "SS-TEAR-7",
    "level": "MUST",
    "section": "Teardown",
    "statement": "Termination MUST send SIGTERM first and SIGKILL only after the grace period, so that a SIGTERM handler gets to run; a command that ignores SIGTERM MUST be gone within the grace period plus a bounded delay.",
    "introduced": "1.0",
    "heading": {
      "number": "9.8",
      "title": "The termination sequence"
    }
  },
  {
    "id": "SS-TEAR-8",
    "level": "MUST",
    "section": "Teardown",
    "statement": "Teardown MUST complete without the caller's AbortSignal: disposal after that signal has fired still terminates the command and resolves.",
    "introduced": "1.0",
    "capability": "streaming",
    "heading": {
      "number": "9.9",
      "title": "Independence from the caller's signal"
    }
  },
  {
    "id": "SS-TEAR-9",
    "level": "SHOULD",
    "section": "Teardown",
    "statement": "An implementation SHOULD terminate the command of a Process that is garbage-collected without being disposed, and SHOULD warn, naming the command.",
    "introduced": "1.0",
    "capability": "streaming",
    "heading": {
      "number": "9.10",
      "title": "Safety net"
    }
  },
  {
    "id": "SS-TEAR-10",
    "level": "MUST",
    "section": "process tree",
    "statement": "When the leader exits while processes it started live on, they MUST be sent SIGTERM first and SIGKILL only after the grace period, as in section 9.8, and the command's result MUST NOT be reported while any of them lives.",
    "introduced": "1.1",
    "heading": {
      "number": "9.7",
      "title": "The process tree"
    }
  },
  {
    "id": "SS-OWNER-1",
    "level": "MUST",
    "section": "Owner loss",
    "statement": "A foreground command MUST NOT outlive its owner: when the owner process ends without disposing of it (SIGKILL, out of memory, power loss) or its link to the environment is lost for good, the command's whole process tree (section 9.7) MUST be terminated by the sequence of section 9.8 (SIGTERM, the grace period, SIGKILL) and be gone within `termination.ownerLossMs` of the loss.",
    "introduced": "1.4",
    "heading": {
      "number": "9.11",
      "title": "Owner loss"
    }
  },
  {
    "id": "SS-OWNER-2",
    "level": "MUST",
    "section": "Owner loss",
    "statement": "A sandbox MUST state `termination.ownerLossMs`, the bound of SS-OWNER-1 in milliseconds, as a number no smaller than its `graceMs`, and the value MUST NOT change during the sandbox's lifetime.",
    "introduced": "1.4",
    "heading": {
      "number": "9.11",
      "title": "Owner loss"
    }
  },
  {
    "id": "SS-ORDER-1",
    "level": "MUST",
    "section": "Ordering",
    "statement": "Chunks of one stream MUST be delivered in the order the command wrote them, with no byte lost or duplicated. No order is promised between stdout and stderr.",
    "introduced": "1.0",
    "heading": {
      "number": "7",
      "title": "Ordering"
    }
  },
  {
    "id": "SS-ORDER-2",
    "level": "MUST",
    "section": "Ordering",
    "statement": "Every chunk MUST be tagged with the stream that produced it: no stderr byte may appear in a stdout chunk, nor the reverse.",
    "introduced": "1.0",
    "heading": {
      "number": "7",
      "title": "Ordering"
    }
  },
  {
    "id": "SS-BYTES-1",
    "level": "MUST",
    "section": "Bytes",
    "statement": "Output MUST be delivered byte-exact, with no decoding or normalisation: all 256 byte values and invalid UTF-8 survive `run()` and `stream()`, and text split across chunks MUST reassemble.",
    "introduced": "1.0",
    "capability": "binary-output",
    "heading": {
      "number": "8.1",
      "title": "Byte-exact output"
    }
  },
  {
    "id": "SS-BYTES-2",
    "level": "MUST",
    "section": "Bytes",
    "statement": "Output that ends without a newline MUST be delivered in full, final chunk included.",
    "introduced": "1.0",
    "heading": {
      "number": "8.1",
      "title": "Byte-exact output"
    }
  },
  {
    "id": "SS-TEXT-1",
    "level": "MUST",
    "section": "Bytes",
    "statement": "Without `binary-output`, output MUST be delivered as the UTF-8 encoding of what the WHATWG UTF-8 decoder makes of the bytes the command wrote: valid UTF-8 unchanged, and each maximal subpart of an invalid sequence replaced by U+FFFD REPLACEMENT CHARACTER (bytes EF BF BD); text split across chunks MUST reassemble to the same bytes.",
    "introduced": "1.1",
    "without": "binary-output",
    "heading": {
      "number": "8.2",
      "title": "Text-only backends"
    }
  },
  {
    "id": "SS-WAIT-1",
    "level": "MUST",
    "section": "wait()",
    "statement": "`wait()` MUST be idempotent: every call resolves with an equal ExecResult (`streamed: true`).",
    "introduced": "1.0",
    "capability": "streaming",
    "heading": {
      "number": "6.3",
      "title": "wait()"
    }
  },
  {
    "id": "SS-WAIT-2",
    "level": "MUST",
    "section": "wait()",
    "statement": "`wait()` called with output still unread MUST drain and discard it and MUST NOT hang, however much output remains.",
    "introduced": "1.0",
    "capability": "streaming",
    "heading": {
      "number": "6.3",
      "title": "wait()"
    }
  },
  {
    "id": "SS-WAIT-3",
    "level": "MUST",
    "section": "wait()",
    "statement": "While a loop is iterating the Process, `wait()` MUST NOT take output from it: the loop MUST receive every chunk up to the end of the output, and `wait()` MUST discard only output that no live iterator will read.",
    "introduced": "1.1",
    "capability": "streaming",
    "heading": {
      "number": "6.3",
      "title": "wait()"
    }
  },
  {
    "id": "SS-RESULT-1",
    "level": "MUST",
    "section": "ExecResult",
    "statement": "A result from `stream()` MUST have `streamed: true` with empty `stdout` and `stderr`; a result from `run()` MUST have `streamed: false` with the captured output.",
    "introduced": "1.0",
    "heading": {
      "number": "10",
      "title": "ExecResult and exit status"
    }
  },
  {
    "id": "SS-RESULT-2",
    "level": "MUST",
    "section": "ExecResult",
    "statement": "`exitCode` MUST be the code the command exited with (0 to 255) with `signal` null; a command ended by a signal MUST have `exitCode: null` and `signal` naming it.",
    "introduced": "1.0",
    "heading": {
      "number": "10",
      "title": "ExecResult and exit status"
    }
  },
  {
    "id": "SS-RESULT-3",
    "level": "MUST",
    "section": "ExecResult",
    "statement": "Every ExecResult, encoded to its wire form, MUST validate against the spec's `ExecResult` schema.",
    "introduced": "1.0",
    "heading": {
      "number": "10",
      "title": "ExecResult and exit status"
    }
  },
  {
    "id": "SS-CAPOUT-1",
    "level": "MUST",
    "section": "Output cap",
    "statement": "`run()` MUST keep at most `maxOutputBytes` bytes per stream and set that stream's truncation flag when more was written; the command MUST keep being drained past the cap.",
    "introduced": "1.0",
    "heading": {
      "number": "5.1",
      "title": "Output cap"
    }
  },
  {
    "id": "SS-ONOUT-1",
    "level": "MUST",
    "section": "onOutput",
    "statement": "`run()` with `onOutput` MUST deliver every chunk to the callback as it arrives, including chunks past the cap, in the order of arrival.",
    "introduced": "1.0",
    "heading": {
      "number": "5.2",
      "title": "onOutput"
    }
  },
  {
    "id": "SS-ONOUT-2",
    "level": "MUST",
    "section": "onOutput",
    "statement": "When the `onOutput` callback throws, it MUST NOT be called again, the command MUST be terminated, and `run()` MUST reject with `CallbackFailed` whose `cause` is what the callback threw and whose `result` holds the output captured until the command was gone.",
    "introduced": "1.0",
    "heading": {
      "number": "5.2",
      "title": "onOutput"
    }
  },
  {
    "id": "SS-STDIN-1",
    "level": "MUST",
    "section": "Standard input",
    "statement": "With the `stdin` capability, `stream(..., { stdin: 'pipe' })` MUST give a writer whose writes arrive in call order and whose `end()` delivers end-of-file; after the command exited, `write()` MUST reject with `StdinClosed`.",
    "introduced": "1.0",
    "capability": "stdin",
    "heading": {
      "number": "6.4",
      "title": "Standard input"
    }
  },
  {
    "id": "SS-STDIN-2",
    "level": "MUST",
    "section": "Standard input",
    "statement": "With the `stdin` capability, `run(..., { input })` MUST deliver the bytes then end-of-file.",
    "introduced": "1.0",
    "capability": "stdin",
    "heading": {
      "number": "6.4",
      "title": "Standard input"
    }
  },
  {
    "id": "SS-STDIN-3",
    "level": "MUST",
    "section": "Standard input",
    "statement": "With the `stdin` capability, the bytes given to `write()` MUST reach the command exactly once and in call order; a write whose delivery is uncertain MUST reject with `TransportError`, every later `write()` MUST reject with `TransportError` too, and `end()` MUST still close standard input.",
    "introduced": "1.1",
    "capability": "stdin",
    "heading": {
      "number": "6.4",
      "title": "Standard input"
    }
  },
  {
    "id": "SS-STDIN-4",
    "level": "MUST",
    "section": "Standard input",
    "statement": "Without `stdin: 'pipe'` or `input`, the command's standard input MUST be at end-of-file from the start (empty, or the null device), never an open pipe that nobody writes.",
    "introduced": "1.1",
    "heading": {
      "number": "6.4",
      "title": "Standard input"
    }
  },
  {
    "id": "SS-STDIN-5",
    "level": "MUST",
    "section": "Standard input",
    "statement": "With the `stdin` capability, a `write()` to a command that stopped reading (every process that held its standard input closed it, or the command exited) MUST reject with `StdinClosed` and MUST NOT hang.",
    "introduced": "1.1",
    "capability": "stdin",
    "heading": {
      "number": "6.4",
      "title": "Standard input"
    }
  },
  {
    "id": "SS-CONC-1",
    "level": "MUST",
    "section": "Concurrency",
    "statement": "Processes running at the same time in one sandbox MUST stay separate: no chunk, exit status or signal crosses between them.",
    "introduced": "1.0",
    "heading": {
      "number": "11",
      "title": "Concurrency"
    }
  },
  {
    "id": "SS-LIMIT-1",
    "level": "MUST",
    "section": "Resource limits",
    "statement": "With the `resource-limits` capability, a command exceeding a limit in `limits` MUST be stopped by it, and the result MUST show it (a signal or a failing exit code).",
    "introduced": "1.0",
    "capability": "resource-limits",
    "heading": {
      "number": "12.1",
      "title": "Resource limits"
    }
  },
  {
    "id": "SS-USER-1",
    "level": "MUST",
    "section": "User",
    "statement": "With the `user` capability, the `user` option MUST run the command as that account.",
    "introduced": "1.0",
    "capability": "user",
    "heading": {
      "number": "12.2",
      "title": "User"
    }
  },
  {
    "id": "SS-PTY-1",
    "level": "MUST",
    "section": "Terminals",
    "statement": "With `pty`, the command's standard input, output and error MUST be one new pseudo-terminal of the given size, which MUST be the command's controlling terminal, and the command MUST lead the terminal's foreground process group and SHOULD lead the terminal's session; `TERM` MUST be `xterm-256color` unless `env` sets it, and the terminal MUST start in canonical input (`icanon`), echo (`echo`), signals from the keyboard (`isig`), CR to NL on input (`icrnl`) and NL to CR NL on output (`opost`, `onlcr`), with `intr` 0x03, `quit` 0x1c, `susp` 0x1a, `eof` 0x04, `erase` 0x7f and `kill` 0x15.",
    "introduced": "1.5",
    "capability": "pty",
    "heading": {
      "number": "12.3",
      "title": "Terminals"
    }
  },
  {
    "id": "SS-PTY-2",
    "level": "MUST",
    "section": "Terminals",
    "statement": "With `pty`, every byte the terminal yields MUST be delivered, exact and in order, as `stdout` chunks, and nothing as `stderr`; what the command wrote before its process tree ended MUST all be delivered, its last bytes included.",
    "introduced": "1.5",
    "capability": "pty",
    "heading": {
      "number": "12.3",
      "title": "Terminals"
    }
  },
  {
    "id": "SS-PTY-3",
    "level": "MUST",
    "section": "Terminals",
    "statement": "With `pty`, the bytes given to `write()` or as `input` MUST reach the terminal's input exactly once, in call order and unfiltered, and `end()` MUST type end-of-file and close the writer, leaving the terminal and its output open: 0x04 once when nothing was written or the last byte written was CR, NL or 0x04, and 0x04 twice otherwise; end-of-file MUST be typed the same way after `input`, and once at the start when the command was given neither `stdin: 'pipe'` nor `input`.",
    "introduced": "1.5",
    "capability": "pty",
    "heading": {
      "number": "12.3",
      "title": "Terminals"
    }
  },
  {
    "id": "SS-PTY-4",
    "level": "MUST",
    "section": "Terminals",
    "statement": "For a command started with `pty`, `proc.resize(cols, rows)` MUST set the terminal's size and resolve once it is set, resizes taking effect in call order; it MUST reject with `InvalidArgument` (key `cols` or `rows`) for a size outside 1 to 65535, with `InvalidState` once the command settled, and with `TransportError` when a remote backend did not confirm the resize, which MUST NOT end the command; on a Process started without `pty` it MUST reject with `InvalidState`.",
    "introduced": "1.5",
    "capability": "pty",
    "heading": {
      "number": "12.3",
      "title": "Terminals"
    }
  },
  {
    "id": "SS-PTY-5",
    "level": "MUST",
    "section": "Terminals",
    "statement": "Under a terminal, every exit path of section 9.1 MUST end the terminal's whole session: SIGHUP to every process of the session, then at once SIGTERM and SIGCONT, the grace period and SIGKILL, the sequence of section 9.8 with a hangup in front, and a command that ignores SIGHUP and SIGTERM MUST be gone within the grace period plus the bounded delay of SS-TEAR-7.",
    "introduced": "1.5",
    "capability": "pty",
    "heading": {
      "number": "12.3",
      "title": "Terminals"
    }
  },
  {
    "id": "SS-PTY-6",
    "level": "MUST",
    "section": "Terminals",
    "statement": "Under a terminal, the result MUST be the command's own status: the code it exited with, or the signal that ended it, never a status of the terminal or of anything the implementation put between them; when the command exits and leaves processes of its session behind, its status is the result, and they MUST be wound down as SS-TEAR-10 requires with SIGHUP in front, their output delivered until they are gone.",
    "introduced": "1.5",
    "capability": "pty",
    "heading": {
      "number": "12.3",
      "title": "Terminals"
    }
  },
  {
    "id": "SS-BG-1",
    "level": "MUST",
    "section": "Background commands",
    "statement": "A background command's `commandId` MUST name it, and only it, in `attach()` and `commands()` while its record is kept.",
    "introduced": "1.2",
    "capability": "attach",
    "heading": {
      "number": "13.1",
      "title": "Background commands"
    }
  },
  {
    "id": "SS-BG-2",
    "level": "MUST",
    "section": "Background commands",
    "statement": "Disposing a background Process MUST terminate the command unless `detach()` was called; `detach()` MUST leave the command running, owned as before, and release the Process: its unread output is discarded, iteration ends, `wait()` and `kill()` reject with `InvalidState`, and disposal resolves at once.",
    "introduced": "1.2",
    "capability": "attach",
    "heading": {
      "number": "13.1",
      "title": "Background commands"
    }
  },
  {
    "id": "SS-BG-3",
    "level": "MUST",
    "section": "Background commands",
    "statement": "`Sandbox.close()` MUST terminate every background command the sandbox started, detached or not, before it resolves, and afterwards the command MUST NOT be listed by any handle.",
    "introduced": "1.2",
    "capability": "attach",
    "heading": {
      "number": "13.1",
      "title": "Background commands"
    }
  },
  {
    "id": "SS-BG-4",
    "level": "MUST",
    "section": "Background commands",
    "statement": "`background: true` together with `timeout`, `signal`, `stdin: 'pipe'` or `input` MUST be rejected with `InvalidArgument` whose `key` is `options.background`, before any side effect.",
    "introduced": "1.2",
    "capability": "attach",
    "heading": {
      "number": "13.1",
      "title": "Background commands"
    }
  },
  {
    "id": "SS-ATTACH-1",
    "level": "MUST",
    "section": "Attach",
    "statement": "An id that names no background command MUST make `attach()` reject with `CommandNotFound` before any side effect: nothing starts, nothing is listed.",
    "introduced": "1.2",
    "capability": "attach",
    "heading": {
      "number": "13.2",
      "title": "Attach"
    }
  },
  {
    "id": "SS-ATTACH-2",
    "level": "MUST",
    "section": "Attach",
    "statement": "An attached Process MUST deliver each stream from `skipped` on, every byte once and in order, including all that the command writes after `attach()` resolved; with `{ replay: false }` it MUST deliver only what follows.",
    "introduced": "1.2",
    "capability": "attach",
    "heading": {
      "number": "13.2",
      "title": "Attach"
    }
  },
  {
    "id": "SS-ATTACH-3",
    "level": "MUST",
    "section": "Attach",
    "statement": "With `replay-full`, attaching MUST replay each stream from its first byte: `skipped` MUST be 0.",
    "introduced": "1.2",
    "capability": "replay-full",
    "heading": {
      "number": "13.2",
      "title": "Attach"
    }
  },
  {
    "id": "SS-ATTACH-4",
    "level": "MUST",
    "section": "Attach",
    "statement": "With `replay-tail`, attaching MUST replay at least the last min(written, 1 MiB) bytes of each stream written before it, and `skipped` MUST count the rest exactly.",
    "introduced": "1.2",
    "capability": "replay-tail",
    "heading": {
      "number": "13.2",
      "title": "Attach"
    }
  },
  {
    "id": "SS-ATTACH-5",
    "level": "MUST",
    "section": "Attach",
    "statement": "Attaching to a command that has ended MUST give a Process that ends by itself, with nothing sent to it: its replay as SS-ATTACH-2 to SS-ATTACH-4 require, then the end of iteration, and its exact result (exit code or signal) from `wait()`.",
    "introduced": "1.2",
    "capability": "attach",
    "heading": {
      "number": "13.2",
      "title": "Attach"
    }
  },
  {
    "id": "SS-ATTACH-6",
    "level": "MUST",
    "section": "Attach",
    "statement": "Disposing an attached Process MUST terminate its command (or, when the command has ended, forget it) and remove it from `commands()`, unless the Process was detached; after `detach()` the command MUST run on and stay listed.",
    "introduced": "1.2",
    "capability": "attach",
    "heading": {
      "number": "13.2",
      "title": "Attach"
    }
  },
  {
    "id": "SS-START-3",
    "level": "MUST",
    "section": "Start",
    "statement": "Attaching, listing, detaching and re-establishing a connection MUST NOT start the command again.",
    "introduced": "1.2",
    "capability": "attach",
    "heading": {
      "number": "13.3",
      "title": "Never a second start"
    }
  },
  {
    "id": "SS-RECON-1",
    "level": "MUST",
    "section": "Reconnect",
    "statement": "A handle built from the environment's id MUST list and attach to the background commands other handles started, and its `close()` MUST end only the attached Processes it holds undetached.",
    "introduced": "1.2",
    "capability": "attach-reconnect",
    "heading": {
      "number": "13.4",
      "title": "Reconnect"
    }
  },
  {
    "id": "SS-RECON-2",
    "level": "MUST",
    "section": "Reconnect",
    "statement": "A broken link to a running background command MUST be re-established with every byte delivered once, or the Process MUST reject with `TransportError` whose `commandId` is the command's, the command left running, owned as before, and attachable.",
    "introduced": "1.2",
    "capability": "attach-reconnect",
    "heading": {
      "number": "13.4",
      "title": "Reconnect"
    }
  },
  {
    "id": "SS-TESTEE-1",
    "level": "MUST",
    "section": "The testee protocol",
    "statement": "Each message MUST be one JSON object on one line, terminated by `\\n`, in UTF-8. The kit writes requests on the testee's standard input; the testee writes answers and calls on its standard output, and nothing else there (logs go to standard error). Objects MAY carry properties this section does not name; a reader MUST ignore them.",
    "introduced": "1.3",
    "provedBy": "harness",
    "heading": {
      "number": "18.1",
      "title": "Framing"
    }
  },
  {
    "id": "SS-TESTEE-2",
    "level": "MUST",
    "section": "The testee protocol",
    "statement": "The kit's first request is `hello`. Every request carries an `id` (a string the kit chooses, unique for the connection) and an `op`. The testee MUST answer every request exactly once, with `{\"id\": ..., \"ok\": true, \"value\": ...}` or `{\"id\": ..., \"ok\": false, \"error\": {...}}`, in any order. An answer to an id the kit did not send, a line that is not a JSON object, or an `ok: false` answer without an error object is a **harness error** of the run (exit status 2), never a verdict.",
    "introduced": "1.3",
    "provedBy": "harness",
    "heading": {
      "number": "18.1",
      "title": "Framing"
    }
  },
  {
    "id": "SS-TESTEE-3",
    "level": "MUST",
    "section": "The testee protocol",
    "statement": "Requests are handled concurrently: a request whose work waits (a `wait`, a `next`) MUST NOT hold back the answers of later requests. The requests `stream`, `props`, `stdin`, `manifest`, `iterate`, and the first step of every two-step request MUST be answered without waiting on any command's progress: the kit blocks on them, because `Sandbox.stream()`, the properties of a Sandbox and a Process and `[Symbol.asyncIterator]()` are synchronous, and because the cases tell a call that throws at once from one that rejects.",
    "introduced": "1.3",
    "provedBy": "harness",
    "heading": {
      "number": "18.1",
      "title": "Framing"
    }
  },
  {
    "id": "SS-TESTEE-4",
    "level": "MUST",
    "section": "The testee protocol",
    "statement": "The testee MUST NOT act on its own: it pulls a chunk from its adapter only on `next`, calls the adapter's `wait()` only on `wait`, and so on. A testee that read ahead would drain output on its adapter's behalf and hide the adapter's own behaviour.",
    "introduced": "1.3",
    "provedBy": "harness",
    "heading": {
      "number": "18.1",
      "title": "Framing"
    }
  },
  {
    "id": "SS-TESTEE-5",
    "level": "MUST",
    "section": "The testee protocol",
    "statement": "When its standard input ends (after `bye`, or when the kit goes away), the testee MUST close every sandbox it opened and exit. The kit closes the testee's standard input, then, after a grace period, sends SIGTERM and then SIGKILL to the testee's process group, so the testee's tree never outlives the run. A testee that exits while the kit is running, or that leaves a request unanswered and does not answer a `ping` within the kit's bound (at least 10 s, more on a slow link), is a harness error naming what happened.",
    "introduced": "1.3",
    "provedBy": "harness",
    "heading": {
      "number": "18.1",
      "title": "Framing"
    }
  },
  {
    "id": "SS-TESTEE-6",
    "level": "MUST",
    "section": "The testee protocol",
    "statement": "Arguments, options and results MUST travel in the **value form**: a JSON value is itself; what JSON cannot carry is a one-key object whose key begins with `$`: `{\"$bytes\": base64}` (a `Uint8Array`), `{\"$undefined\": true}`, `{\"$number\": \"NaN\" | \"Infinity\" | \"-Infinity\"}`, `{\"$bigint\": \"123\"}`, `{\"$function\": id, \"throws\": bool}` (a callback, 18.5), `{\"$signal\": id, \"aborted\": bool, \"reason\": value}` (an `AbortSignal`), `{\"$other\": text}` (a value of a type no adapter accepts, such as a symbol: the testee passes something of its own language that the adapter must refuse), and `{\"$object\": {...}}` around a plain object whose own keys begin with `$`. The kit sends the caller's arguments as the caller gave them, invalid ones included: the adapter judges them, and the `InvalidArgument` it raises names the key.",
    "introduced": "1.3",
    "provedBy": "harness",
    "heading": {
      "number": "18.3",
      "title": "Values"
    }
  },
  {
    "id": "SS-TESTEE-7",
    "level": "MUST",
    "section": "The testee protocol",
    "statement": "An error MUST travel as an object with `name`, `message` and, for the errors of section 14, `code` and the fields of its class: `key` and `reason` (`INVALID_ARGUMENT`), `capability` and `operation` (`CAPABILITY_NOT_SUPPORTED`), `commandId` (`TRANSPORT`, `COMMAND_NOT_FOUND`), `argv` (`SPAWN_FAILED`), `result` (`ABORTED`, `CALLBACK_FAILED`, in the value form), and `cause` (an error, the same way); `stack` MAY say where it was thrown. The kit rebuilds the class of section 14 from `code`. An error with no `code`, or a code section 14 does not define, is not the contract's: no case accepts it. A thrown value that is not an error travels as `{\"name\": \"NonError\", \"message\": text, \"thrown\": value}`.",
    "introduced": "1.3",
    "provedBy": "harness",
    "heading": {
      "number": "18.4",
      "title": "Errors"
    }
  },
  {
    "id": "SS-TESTEE-8",
    "level": "MUST",
    "section": "The testee protocol",
    "statement": "A callback the kit passes (`onOutput`) arrives as `{\"$function\": id, \"throws\": bool}`. The testee gives its adapter a function that, on each call, first writes the line `{\"call\": id, \"args\": [values]}`, then returns, or throws when `throws` is true. The kit runs its own callback for each such line, in order; a call line MUST be written before the answer of the request whose work made the call. An error the adapter raises because the callback threw carries, as its `cause`, the thrown error with `\"callback\": id`; the kit puts back in its place what its own callback threw.",
    "introduced": "1.3",
    "provedBy": "harness",
    "heading": {
      "number": "18.5",
      "title": "Callbacks"
    }
  },
  {
    "id": "SS-TESTEE-9",
    "level": "MUST",
    "section": "The testee protocol",
    "statement": "What the adapter raises where no caller can catch it (in Node.js an uncaught exception or an unhandled rejection; in Python an exception nobody retrieves from a task) MUST NOT end the testee: it writes `{\"fault\": error, \"kind\": \"uncaught exception\" | \"unhandled rejection\", \"requests\": [ids]}`, naming the request whose work raised it where it can tell (or none). The kit raises it again in the context of that request, so it fails that request's case as in a direct run (ADR-0031).",
    "introduced": "1.3",
    "provedBy": "harness",
    "heading": {
      "number": "18.4",
      "title": "Errors"
    }
  }
];
