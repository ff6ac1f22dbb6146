"""The testee's requests (spec 1.3, section 18.2) on the Python adapter's objects.

Each request is the one call of the contract that bears its name, made on
the object its ids name, with the arguments as the kit sent them; its answer
is what the call returned or raised. Nothing is done that the kit did not
ask for: a chunk is pulled on ``next`` only, ``wait()`` is called on
``wait`` only (SS-TESTEE-4), so the verdicts are the adapter's own.

``run``, ``attach``, ``commands`` and a Process's calls but iteration carry a
``settle`` id and are answered twice: at once (the call returned: a coroutine
function never raises at its call), then under ``settle`` with how it settled.
An answer about a Process carries its properties as they were when the call
settled (``props``), so the kit reads them as a direct caller would. What the adapter raises
where no caller catches it (an exception in a loop callback) goes out as a
``fault`` line naming the request whose work raised it.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from sandstream import SPEC_VERSION, AbortController, Process

from .calls import attach_keywords, run_keywords, stream_keywords
from .errors import CallbackThrew, ProtocolMisuse, encode_error
from .process_requests import ProcessRequests
from .values import UNDEFINED, Makers, decode_value, encode_result, encode_value

__all__ = ["CURRENT_REQUEST", "PROTOCOL", "SYNC_OPS", "TWO_STEP_OPS", "Testee"]

#: The protocol's own version (SS-TESTEE-2's hello).
PROTOCOL = 1

#: Requests the kit blocks on: answered without waiting on any command (SS-TESTEE-3).
SYNC_OPS = frozenset({"stream", "props", "iterate", "stdin", "manifest", "run", "attach", "commands",
                      "started", "wait", "kill", "dispose", "detach", "write", "end", "resize"})

#: Requests answered in two steps when they carry a ``settle`` id: at once, whether the call
#: raised or returned (a Python coroutine function only returns), then, under ``settle``,
#: how what it returned settled. Without ``settle`` they are answered once, when settled.
TWO_STEP_OPS = frozenset({"run", "attach", "commands", "started", "wait", "kill", "dispose", "detach", "write", "end",
                          "resize"})

#: The optional methods of a sandbox the kit may call, when the sandbox has them.
_OPTIONAL_METHODS = ("attach", "commands")

#: The methods of a Process the contract requires, by the names ``lacks`` uses, as Python spells them.
_PROCESS_METHODS = {"started": "started", "wait": "wait", "kill": "kill", "iterate": "__aiter__", "dispose": "aclose",
                    "resize": "resize"}

#: The id of the request whose work is running: a fault raised where no caller catches it names it.
CURRENT_REQUEST: contextvars.ContextVar[str | None] = contextvars.ContextVar("sandstream_testee_request", default=None)

Factory = Callable[[], Any]
Send = Callable[[dict[str, Any]], None]


class Testee(ProcessRequests):
    """One connection's tables (sandboxes, Processes, iterators, signals) and its handlers."""

    def __init__(self, factory: Factory, send: Send) -> None:
        self._factory = factory
        self._send = send
        self._sandboxes: dict[str, Any] = {}
        self._processes: dict[str, Process] = {}
        self._iterators: dict[str, Any] = {}
        self._iterator_process: dict[str, str] = {}
        self._signals: dict[str, AbortController] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._next = 0
        self._makers = Makers(self._stand_in, self._signal)

    # ---- the connection ---------------------------------------------------

    async def serve(self, reader: asyncio.StreamReader) -> None:
        """Answers requests until ``bye`` or the end of input, then closes every sandbox (SS-TESTEE-5)."""
        while True:
            line = await reader.readline()
            if not line:
                break
            if not line.strip():
                continue
            try:
                request = json.loads(line)
            except ValueError as error:
                print(f"sandstream-testee: a line that is not JSON: {error}", file=sys.stderr)
                continue
            if not isinstance(request, dict):
                continue
            if request.get("op") in SYNC_OPS:
                # Requests read before this one start their work first, as the kit sent them
                # (a write, an end): its answer then shows their effect, as a direct call's would.
                await asyncio.sleep(0)
            self.dispatch(request)
            if request.get("op") == "bye":
                break
        await self.shutdown()
        # A bye is answered from its own task once everything is closed: the process must not end first.
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)

    def dispatch(self, request: dict[str, Any]) -> None:
        """Answers a synchronous request now; starts a task for any other."""
        request_id = request.get("id")
        op = request.get("op")
        handler = getattr(self, f"_op_{op}", None) if isinstance(op, str) else None
        if handler is None:
            self._fail(request_id, ProtocolMisuse(f"unknown op {op!r}"))
            return
        # The request's work, and every callback it leaves on the loop, know which request it is.
        CURRENT_REQUEST.set(request_id if isinstance(request_id, str) else None)
        about = self._concerns(request)
        try:
            outcome = handler(request)
        except Exception as error:  # the call raised synchronously: so does the kit's
            self._fail(request_id, error, about)
            return
        if not inspect.isawaitable(outcome):
            self._answer(request_id, outcome, about)
            return
        settle = request.get("settle") if op in TWO_STEP_OPS else None
        if settle is not None:
            self._answer(request_id, {"returned": True})
            request_id = settle
        task = asyncio.get_running_loop().create_task(self._settle(request_id, outcome, about))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _settle(self, request_id: object, work: Awaitable[object], about: Process | None = None) -> None:
        try:
            value = await work
        except asyncio.CancelledError as error:
            task = asyncio.current_task()
            if task is not None and task.cancelling() > 0:
                raise  # this task was cancelled: the testee is going away, and nobody waits for this answer
            # The adapter's own work raised it, not a cancel of ours: the kit gets an answer to judge.
            self._fail(request_id, error, about)
            return
        except Exception as error:
            self._fail(request_id, error, about)
            return
        self._answer(request_id, value, about)

    def _answer(self, request_id: object, value: object, about: Process | None = None) -> None:
        try:
            self._send({"id": request_id, "ok": True, "value": value, **self._snapshot(about)})
        except (TypeError, ValueError) as error:  # a value the encoder missed: a bug of this testee, said so
            self._fail(request_id, error)

    def _fail(self, request_id: object, error: BaseException, about: Process | None = None) -> None:
        self._send({"id": request_id, "ok": False, "error": encode_error(error), **self._snapshot(about)})

    def _concerns(self, request: dict[str, Any]) -> Process | None:
        """The Process a request names (by its id, or its iterator's), if any: its answer carries its properties."""
        if request.get("op") == "props":
            return None
        key = request.get("process")
        if not isinstance(key, str):
            iterator = request.get("iterator")
            key = self._iterator_process.get(iterator) if isinstance(iterator, str) else None
        return self._processes.get(key) if isinstance(key, str) else None

    def _snapshot(self, about: Process | None) -> dict[str, Any]:
        if about is None:
            return {}
        try:
            return {"props": self._props_of(about)}
        except Exception:  # a property that raises is judged when the kit reads it
            return {}

    def report_fault(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """The loop's exception handler: what the adapter raised where no caller could catch it.

        Sent as a ``fault`` line naming the request whose work raised it, so the
        kit raises it in that request's case, as a direct run would; still logged.
        """
        error = context.get("exception")
        if isinstance(error, Exception):
            source = context.get("handle") or context.get("future") or context.get("task")
            scope = getattr(source, "_context", None)
            request = scope.get(CURRENT_REQUEST) if isinstance(scope, contextvars.Context) else None
            kind = "unhandled rejection" if "future" in context or "task" in context else "uncaught exception"
            self._send({"fault": encode_error(error), "kind": kind, "requests": [] if request is None else [request]})
        loop.default_exception_handler(context)

    async def shutdown(self) -> None:
        """Closes every sandbox this connection opened; their Processes end with them."""
        await asyncio.gather(*(sandbox.close() for sandbox in self._sandboxes.values()), return_exceptions=True)
        # Requests still running (a next, a wait) end with their commands: let them answer
        # (not the bye whose task this may be).
        others = [task for task in self._tasks if task is not asyncio.current_task()]
        if others:
            await asyncio.wait(others, timeout=1)

    # ---- what the kit holds by id -----------------------------------------

    def _id(self, prefix: str) -> str:
        self._next += 1
        return f"{prefix}{self._next}"

    def _lookup(self, table: dict[str, Any], key: object, what: str) -> Any:
        found = table.get(key) if isinstance(key, str) else None
        if found is None:
            raise ProtocolMisuse(f"no {what} {key!r}")
        return found

    def _stand_in(self, callback: str, throws: bool) -> Callable[..., None]:
        """A function the adapter calls in place of the kit's callback (SS-TESTEE-8)."""
        def call(*args: object) -> None:
            # Written now, before the answer of the request whose work made the call.
            self._send({"call": callback, "args": [encode_value(arg) for arg in args]})
            if throws:
                raise CallbackThrew(callback)
        return call

    def _signal(self, signal_id: str, aborted: bool, reason: object) -> object:
        """The adapter's abort signal for the kit's; ``abort`` fires it later."""
        controller = AbortController()
        if aborted:
            controller.abort(reason)
        self._signals[signal_id] = controller
        return controller.signal

    def _arg(self, wire: object) -> object:
        return decode_value(wire, self._makers)

    def _describe_sandbox(self, sandbox: Any) -> dict[str, Any]:
        key = self._id("s")
        self._sandboxes[key] = sandbox
        methods = [name for name in _OPTIONAL_METHODS if callable(getattr(sandbox, name, None))]
        return {"sandbox": key, "name": encode_value(sandbox.name), "capabilities": encode_value(sandbox.capabilities),
                "termination": encode_value(getattr(sandbox, "termination", UNDEFINED)), "methods": methods}

    def _describe_process(self, proc: Process) -> dict[str, Any]:
        key = self._id("p")
        self._processes[key] = proc
        return {"process": key, "id": encode_value(proc.id), "argv": encode_value(list(proc.argv)),
                "background": callable(getattr(proc, "detach", None)),
                "lacks": [name for name, member in _PROCESS_METHODS.items() if not callable(getattr(proc, member, None))],
                "thenable": False}  # a Python Process is never awaitable: the kit's `then` stays absent

    def _process(self, request: dict[str, Any]) -> Process:
        return self._lookup(self._processes, request.get("process"), "process")

    def _sandbox(self, request: dict[str, Any]) -> Any:
        return self._lookup(self._sandboxes, request.get("sandbox"), "sandbox")

    async def _make(self) -> Any:
        sandbox = self._factory()
        return await sandbox if inspect.isawaitable(sandbox) else sandbox

    # ---- the requests: sandboxes ------------------------------------------

    async def _op_hello(self, request: dict[str, Any]) -> dict[str, Any]:
        probe = await self._make()
        try:
            return {"protocol": PROTOCOL, "spec": SPEC_VERSION, "name": probe.name,
                    "manifest": encode_value(probe.capabilities),
                    "termination": encode_value(getattr(probe, "termination", UNDEFINED)), "hooks": [],
                    # A command id equal to it names the adapter's host, not a command.
                    "pid": os.getpid()}
        finally:
            await probe.close()

    async def _op_open(self, request: dict[str, Any]) -> dict[str, Any]:
        return self._describe_sandbox(await self._make())

    async def _op_close(self, request: dict[str, Any]) -> None:
        await self._sandbox(request).close()

    def _op_manifest(self, request: dict[str, Any]) -> object:
        return encode_value(self._sandbox(request).capabilities)

    def _op_run(self, request: dict[str, Any]) -> Awaitable[object]:
        # The arguments are read now, in the order the lines came: an abort sent right
        # after this request finds the signal it names already made.
        sandbox = self._sandbox(request)
        argv = self._arg(request.get("argv"))
        options = self._arg(request.get("options"))

        async def run() -> object:
            # In the call: the adapter's run() rejects a bad option, never raises at once.
            return encode_result(await sandbox.run(argv, **run_keywords(argv, options)))
        return run()

    def _op_stream(self, request: dict[str, Any]) -> dict[str, Any]:
        sandbox = self._sandbox(request)
        argv = self._arg(request.get("argv"))
        keywords = stream_keywords(argv, self._arg(request.get("options")))
        return self._describe_process(sandbox.stream(argv, **keywords))

    def _op_attach(self, request: dict[str, Any]) -> Awaitable[dict[str, Any]]:
        sandbox = self._sandbox(request)
        command_id = self._arg(request.get("commandId"))
        keywords = attach_keywords(self._arg(request.get("options")))

        async def attach() -> dict[str, Any]:
            return self._describe_process(await sandbox.attach(command_id, **keywords))
        return attach()

    async def _op_commands(self, request: dict[str, Any]) -> object:
        return encode_value(await self._sandbox(request).commands())

    def _op_observe(self, request: dict[str, Any]) -> None:
        raise ProtocolMisuse("this testee serves no attach hook (its hello lists none)")

    def _op_sever(self, request: dict[str, Any]) -> None:
        raise ProtocolMisuse("this testee serves no sever hook (its hello lists none)")

    # ---- the requests: the connection -------------------------------------

    async def _op_abort(self, request: dict[str, Any]) -> None:
        controller = self._signals.get(request.get("signal"))  # type: ignore[arg-type]
        if controller is not None:  # always succeeds, even after the call that took it ended
            controller.abort(self._arg(request.get("reason")))

    async def _op_ping(self, request: dict[str, Any]) -> None:
        return None

    async def _op_bye(self, request: dict[str, Any]) -> None:
        # Answered once every sandbox is closed (SS-TESTEE-5): the kit then ends the process.
        await self.shutdown()
        return None
