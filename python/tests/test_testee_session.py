"""The testee's requests in one connection, driven in this process as the kit would drive it (spec 1.3, section 18)."""

from __future__ import annotations

import asyncio
import base64
import contextvars
import json
import unittest
from collections.abc import Callable
from typing import Any

from sandstream import create_local_sandbox
from sandstream_testee import Testee
from sandstream_testee.server import CURRENT_REQUEST

from .support import eventually


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            stat = file.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:][:1] not in (b"Z", b"X")


class Session:
    """A Testee reading lines fed here, and every line it wrote, in order."""

    def __init__(self, factory: Callable[[], Any] | None = None) -> None:
        self.lines: list[dict[str, Any]] = []
        self._wrote = asyncio.Event()
        self.reader = asyncio.StreamReader()
        self.testee = Testee(factory or (lambda: create_local_sandbox(grace_ms=200)), self._send)
        self.task = asyncio.get_running_loop().create_task(self.testee.serve(self.reader))
        self._next = 0

    def _send(self, message: dict[str, Any]) -> None:
        self.lines.append(json.loads(json.dumps(message, allow_nan=False)))  # as the kit would read it
        self._wrote.set()

    def send(self, op: str, **params: Any) -> str:
        self._next += 1
        request_id = f"r{self._next}"
        self.reader.feed_data(json.dumps({"id": request_id, "op": op, **params}).encode() + b"\n")
        return request_id

    def answered(self, request_id: str) -> dict[str, Any] | None:
        return next((line for line in self.lines if line.get("id") == request_id), None)

    async def answer(self, request_id: str, timeout: float = 10) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while (line := self.answered(request_id)) is None:
                self._wrote.clear()
                await self._wrote.wait()
        return line

    async def value(self, op: str, **params: Any) -> Any:
        line = await self.answer(self.send(op, **params))
        assert line["ok"], line
        return line["value"]

    async def error(self, op: str, **params: Any) -> dict[str, Any]:
        line = await self.answer(self.send(op, **params))
        assert not line["ok"], line
        return line["error"]

    async def end(self) -> None:
        self.reader.feed_eof()
        await asyncio.wait_for(self.task, 15)


class SessionTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        # As in support.SandboxTest: unittest's debug loop logs any step over 0.1 s, which a fork
        # on a loaded machine can take without anything being wrong.
        asyncio.get_running_loop().slow_callback_duration = 1.0
        self.session = Session()
        self.addAsyncCleanup(self.session.end)
        self.sandbox = (await self.session.value("open"))["sandbox"]

    async def test_hello_states_the_adapter(self) -> None:
        hello = await self.session.value("hello", protocol=1, spec="1.5")
        self.assertEqual((hello["protocol"], hello["spec"], hello["hooks"]), (1, "1.5", []))
        self.assertIs(hello["manifest"]["streaming"], True)
        self.assertIs(hello["manifest"]["attach"], False)
        self.assertEqual(hello["termination"], {"graceMs": 200, "killWaitMs": 5000, "ownerLossMs": 1200})

    async def test_callback_calls_come_before_the_answer(self) -> None:
        request_id = self.session.send("run", sandbox=self.sandbox, argv=["sh", "-c", "printf one"],
                                       options={"onOutput": {"$function": "c1", "throws": False}})
        await self.session.answer(request_id)
        calls = [index for index, line in enumerate(self.session.lines) if line.get("call") == "c1"]
        answer = self.session.lines.index(self.session.answered(request_id))
        self.assertTrue(calls and max(calls) < answer, self.session.lines)
        self.assertEqual(self.session.lines[calls[0]]["args"], [{"stream": "stdout", "data": {"$bytes": "b25l"}}])

    async def test_a_throwing_callback_fails_the_run_naming_it(self) -> None:
        error = await self.session.error("run", sandbox=self.sandbox, argv=["sh", "-c", "echo one; sleep 30"],
                                         options={"onOutput": {"$function": "c2", "throws": True}})
        self.assertEqual(error["code"], "CALLBACK_FAILED")
        self.assertEqual(error["cause"]["callback"], "c2")
        self.assertEqual(error["result"]["stdout"], {"$bytes": "b25lCg=="})

    async def test_abort_rejects_with_the_partial_result(self) -> None:
        request_id = self.session.send("run", sandbox=self.sandbox, argv=["sh", "-c", "echo started; sleep 30"],
                                       options={"signal": {"$signal": "c3", "aborted": False, "reason": None},
                                                "onOutput": {"$function": "c3-output", "throws": False}})
        # Aborted only once the command's output reached the testee, which says so by calling onOutput.
        started = {"stream": "stdout", "data": {"$bytes": "c3RhcnRlZAo="}}
        self.assertTrue(await eventually(lambda: any(line.get("call") == "c3-output" and line["args"] == [started]
                                                     for line in self.session.lines)),
                        f"no onOutput call with the line 'started': {self.session.lines}")
        self.assertIsNone(await self.session.value("abort", signal="c3", reason={"$other": "Error: stop"}))
        error = (await self.session.answer(request_id))["error"]
        self.assertEqual(error["code"], "ABORTED")
        self.assertEqual(error["result"]["stdout"], {"$bytes": "c3RhcnRlZAo="})
        self.assertEqual(error["cause"]["thrown"], {"$other": "Error: stop"})
        # A signal whose call ended, or that was never sent, is aborted all the same.
        self.assertIsNone(await self.session.value("abort", signal="c3", reason=None))
        self.assertIsNone(await self.session.value("abort", signal="unknown", reason=None))

    async def test_invalid_arguments_name_their_key(self) -> None:
        for op, options, key in (("run", {"timeout": {"$number": "NaN"}}, "options.timeout"),
                                 ("run", {"env": {"X": 1}}, "options.env.X"),
                                 ("stream", {"maxOutputBytes": 10}, "options.maxOutputBytes"),
                                 ("stream", {"stdin": "inherit"}, "options.stdin")):
            error = await self.session.error(op, sandbox=self.sandbox, argv=["true"], options=options)
            self.assertEqual((error["code"], error["key"]), ("INVALID_ARGUMENT", key))
        error = await self.session.error("run", sandbox=self.sandbox, argv=["echo", {"$other": "Symbol()"}],
                                         options={"$undefined": True})
        self.assertEqual(error["key"], "argv[1]")

    async def test_a_stream_is_read_chunk_by_chunk_on_request(self) -> None:
        info = await self.session.value("stream", sandbox=self.sandbox, argv=["sh", "-c", "echo a; read x"],
                                        options={"stdin": "pipe"})
        self.assertEqual((info["background"], info["lacks"], info["thenable"]), (False, [], False))
        props = await self.session.value("props", process=info["process"])
        self.assertIsInstance(props["pid"], int)
        self.assertIs(props["exited"], False)
        self.assertEqual(await self.session.value("stdin", process=info["process"]), {"writer": True, "closed": False})
        iterator = (await self.session.value("iterate", process=info["process"]))["iterator"]
        self.assertEqual(await self.session.value("next", iterator=iterator),
                         {"done": False, "value": {"stream": "stdout", "data": {"$bytes": "YQo="}}})
        second = await self.session.error("iterate", process=info["process"])
        self.assertEqual(second["code"], "INVALID_STATE")
        await self.session.value("write", process=info["process"], data={"$bytes": "eAo="})
        await self.session.value("end", process=info["process"])
        self.assertEqual(await self.session.value("next", iterator=iterator), {"done": True, "value": {"$undefined": True}})
        result = await self.session.value("wait", process=info["process"])
        self.assertEqual((result["exitCode"], result["streamed"]), (0, True))

    async def test_the_end_of_input_closes_every_sandbox(self) -> None:
        info = await self.session.value("stream", sandbox=self.sandbox, argv=["sleep", "30"], options={"$undefined": True})
        pid = (await self.session.value("props", process=info["process"]))["pid"]
        self.assertTrue(_alive(pid))
        waiting = self.session.send("wait", process=info["process"])
        await self.session.end()
        self.assertFalse(_alive(pid))
        self.assertEqual(self.session.answered(waiting)["value"]["signal"], "SIGTERM")

    async def test_a_two_step_run_returns_at_once_and_settles_later(self) -> None:
        first = await self.session.answer(self.session.send("run", sandbox=self.sandbox, argv=["sh", "-c", "sleep 0.2; echo done"],
                                                            options={"$undefined": True}, settle="later1"))
        self.assertEqual(first["value"], {"returned": True})
        self.assertIsNone(self.session.answered("later1"))
        settled = await self.session.answer("later1")
        self.assertEqual(settled["value"]["stdout"], {"$bytes": "ZG9uZQo="})
        # An invalid option rejects, as a coroutine function's call does: it never raises at once.
        first = await self.session.answer(self.session.send("run", sandbox=self.sandbox, argv=["true"],
                                                            options={"nonsense": 1}, settle="later2"))
        self.assertTrue(first["ok"])
        self.assertEqual((await self.session.answer("later2"))["error"]["key"], "options.nonsense")
        first = await self.session.answer(self.session.send("commands", sandbox=self.sandbox, settle="later3"))
        self.assertTrue(first["ok"])
        self.assertEqual((await self.session.answer("later3"))["error"]["capability"], "attach")

    async def test_a_terminal_is_resized_in_two_steps(self) -> None:
        script = "trap 'stty size' WINCH; echo ready; while :; do sleep 0.05; done"
        info = await self.session.value("stream", sandbox=self.sandbox, argv=["sh", "-c", script],
                                        options={"pty": {"cols": 80, "rows": 24}})
        self.assertEqual(info["lacks"], [])
        iterator = (await self.session.value("iterate", process=info["process"]))["iterator"]
        seen = b""
        while b"ready" not in seen:
            chunk = (await self.session.value("next", iterator=iterator))["value"]
            seen += base64.b64decode(chunk["data"]["$bytes"])
        first = await self.session.answer(self.session.send("resize", process=info["process"], cols=120, rows=40,
                                                            settle="sized"))
        self.assertEqual(first["value"], {"returned": True})
        self.assertTrue((await self.session.answer("sized"))["ok"])
        while b"40 120" not in seen:
            chunk = (await self.session.value("next", iterator=iterator))["value"]
            seen += base64.b64decode(chunk["data"]["$bytes"])
        self.session.send("resize", process=info["process"], cols=0, rows=40, settle="bad")
        self.assertEqual((await self.session.answer("bad"))["error"]["key"], "cols")
        await self.session.value("dispose", process=info["process"])
        self.session.send("resize", process=info["process"], cols=80, rows=24, settle="late")
        self.assertEqual((await self.session.answer("late"))["error"]["code"], "INVALID_STATE")
        error = await self.session.error("stream", sandbox=self.sandbox, argv=["true"], options={"pty": {"cols": 80}})
        self.assertEqual(error["key"], "options.pty.rows")

    async def test_the_manifest_and_the_writer_are_read_when_asked(self) -> None:
        self.assertIs((await self.session.value("manifest", sandbox=self.sandbox))["stdin"], True)
        info = await self.session.value("stream", sandbox=self.sandbox, argv=["cat"], options={"stdin": "pipe"})
        self.assertEqual(info["lacks"], [])
        self.assertEqual(await self.session.value("stdin", process=info["process"]), {"writer": True, "closed": False})
        await self.session.value("end", process=info["process"])
        self.assertEqual(await self.session.value("stdin", process=info["process"]), {"writer": True, "closed": True})
        other = await self.session.value("stream", sandbox=self.sandbox, argv=["true"], options={"$undefined": True})
        self.assertEqual(await self.session.value("stdin", process=other["process"]), {"writer": False})

    async def test_a_fault_names_the_request_whose_work_raised_it(self) -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda loop, context: self.session.testee.report_fault(loop, context))
        self.addCleanup(loop.set_exception_handler, None)

        def broken() -> None:
            raise RuntimeError("raised where no caller catches it")

        scope = contextvars.copy_context()
        scope.run(CURRENT_REQUEST.set, "r42")
        with self.assertLogs("asyncio", "ERROR"):  # still logged, as asyncio would
            loop.call_soon(broken, context=scope)
            await asyncio.sleep(0.05)
        fault = next(line for line in self.session.lines if "fault" in line)
        self.assertEqual((fault["kind"], fault["requests"]), ("uncaught exception", ["r42"]))
        self.assertEqual(fault["fault"]["message"], "raised where no caller catches it")
        self.assertIn("broken", fault["fault"]["stack"])

    async def test_an_unknown_id_is_an_error_of_no_code(self) -> None:
        error = await self.session.error("close", sandbox="s999")
        self.assertNotIn("code", error)
        self.assertNotIn("code", await self.session.error("no-such-op"))


if __name__ == "__main__":
    unittest.main()


class CancelledByTheAdapter:
    """The local adapter, but ``run()`` raises ``CancelledError`` of its own: no cancel of the testee's."""

    def __init__(self) -> None:
        self._sandbox = create_local_sandbox(grace_ms=200)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sandbox, name)

    async def run(self, argv: list[str], **options: Any) -> Any:
        raise asyncio.CancelledError("raised by the adapter")


class AdapterCancelTest(unittest.IsolatedAsyncioTestCase):
    async def test_a_cancelled_error_the_adapter_raises_is_answered(self) -> None:
        session = Session(CancelledByTheAdapter)
        self.addAsyncCleanup(session.end)
        sandbox = (await session.value("open"))["sandbox"]
        first = await session.answer(session.send("run", sandbox=sandbox, argv=["true"], options={"$undefined": True}, settle="s1"))
        self.assertTrue(first["ok"])
        # Not swallowed as if the testee were going away: the kit gets an error to judge, of no code.
        settled = await session.answer("s1")
        self.assertFalse(settled["ok"])
        self.assertEqual(settled["error"]["name"], "CancelledError")
        self.assertNotIn("code", settled["error"])
