"""Refusals before any side effect (spec sections 3 and 4.2): InvalidArgument, CapabilityNotSupported, SandboxClosed."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

from sandstream import (
    AbortController,
    CapabilityNotSupported,
    InvalidArgument,
    SandboxClosed,
    create_local_sandbox,
)
from sandstream.wire import run_options, stream_options

from .support import SandboxTest

BAD_ARGV = [
    ([], "argv"),
    ("echo hi", "argv"),
    (b"echo", "argv"),
    (["echo", 1], "argv[1]"),
    ([""], "argv[0]"),
    (["echo", "a\0b"], "argv[1]"),
    (None, "argv"),
]

BAD_COMMON = [
    ({"timeout": 0}, "options.timeout"),
    ({"timeout": -5}, "options.timeout"),
    ({"timeout": "100"}, "options.timeout"),
    ({"timeout": math.nan}, "options.timeout"),
    ({"timeout": math.inf}, "options.timeout"),
    ({"timeout": True}, "options.timeout"),
    ({"env": {"SANDSTREAM_X": 1}}, "options.env.SANDSTREAM_X"),
    ({"env": {"A=B": "x"}}, "options.env.A=B"),
    ({"env": {"X": "a\0b"}}, "options.env.X"),
    ({"env": ["X"]}, "options.env"),
    ({"cwd": 42}, "options.cwd"),
    ({"cwd": ""}, "options.cwd"),
    ({"signal": "stop"}, "options.signal"),
    ({"limits": {"cpu_seconds": 0}}, "options.limits.cpuSeconds"),
    ({"limits": {"nonsense": 1}}, "options.limits.nonsense"),
    ({"user": ""}, "options.user"),
    ({"input": 12}, "options.input"),
]
BAD_RUN = [
    ({"max_output_bytes": -1}, "options.maxOutputBytes"),
    ({"max_output_bytes": 1.5}, "options.maxOutputBytes"),
    ({"on_output": "log"}, "options.onOutput"),
]
BAD_STREAM = [
    ({"stdin": "inherit"}, "options.stdin"),
    ({"stdin": "pipe", "input": b"x"}, "options.input"),
    ({"background": "yes"}, "options.background"),
    ({"background": True, "timeout": 5}, "options.background"),
    ({"background": True, "stdin": "pipe"}, "options.background"),
]


class InvalidArgumentTest(SandboxTest):
    async def asyncSetUp(self) -> None:
        await super().asyncSetUp()
        self.directory = tempfile.TemporaryDirectory()
        self.addCleanup(self.directory.cleanup)
        self.marker = Path(self.directory.name, "ran")
        self.touch = ["touch", str(self.marker)]

    async def test_bad_argv_names_the_element(self) -> None:
        for argv, key in BAD_ARGV:
            with self.subTest(argv=argv):
                with self.assertRaises(InvalidArgument) as caught:
                    await self.sandbox.run(argv)  # type: ignore[arg-type]
                self.assertEqual(caught.exception.key, key)
                with self.assertRaises(InvalidArgument) as caught:
                    self.sandbox.stream(argv)  # type: ignore[arg-type]
                self.assertEqual(caught.exception.key, key)

    async def test_bad_options_name_the_option_and_start_nothing(self) -> None:
        for options, key in BAD_COMMON + BAD_RUN:
            with self.subTest(run=options), self.assertRaises(InvalidArgument) as caught:
                await self.sandbox.run(self.touch, **options)
            self.assertEqual(caught.exception.key, key)
        for options, key in BAD_COMMON + BAD_STREAM:
            with self.subTest(stream=options), self.assertRaises(InvalidArgument) as caught:
                self.sandbox.stream(self.touch, **options)
            self.assertEqual(caught.exception.key, key)
        await self.sandbox.run(["true"])  # a command that does run leaves the loop a chance to show a stray one
        self.assertFalse(self.marker.exists(), "a command with an invalid option ran anyway")

    async def test_an_unknown_account_is_refused_before_the_start(self) -> None:
        if not self.sandbox.capabilities["user"]:
            self.skipTest("switching accounts needs root")
        with self.assertRaises(InvalidArgument) as caught:
            self.sandbox.stream(self.touch, user="no-such-account-here")
        self.assertEqual(caught.exception.key, "options.user")
        self.assertFalse(self.marker.exists())

    async def test_spec_shaped_options_through_the_wire_helpers(self) -> None:
        with self.assertRaises(InvalidArgument) as caught:
            await self.sandbox.run(self.touch, **run_options({"timeout": "100"}))
        self.assertEqual(caught.exception.key, "options.timeout")
        with self.assertRaises(InvalidArgument) as caught:
            self.sandbox.stream(self.touch, **stream_options({"limits": {"cpuSeconds": -1}}))
        self.assertEqual(caught.exception.key, "options.limits.cpuSeconds")
        result = await self.sandbox.run(["cat"], **run_options({"timeout": 5000, "input": "x", "maxOutputBytes": 0}))
        self.assertEqual((result.stdout, result.stdout_truncated), (b"", True))
        self.assertFalse(self.marker.exists())


class CapabilityTest(SandboxTest):
    async def test_a_missing_capability_is_refused_before_any_side_effect(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            marker = Path(directory, "ran")
            touch = ["touch", str(marker)]
            off = {"stdin": False, "resource-limits": False, "user": False}
            async with create_local_sandbox(capabilities=off) as sandbox:
                for stream_options_, run_options_, capability in [
                    ({"stdin": "pipe"}, None, "stdin"),
                    ({"input": b"x"}, {"input": b"x"}, "stdin"),
                    ({"limits": {"cpu_seconds": 1}}, {"limits": {"cpu_seconds": 1}}, "resource-limits"),
                    ({"user": "nobody"}, {"user": "nobody"}, "user"),
                    ({"background": True}, None, "attach"),
                ]:
                    with self.subTest(stream_options_), self.assertRaises(CapabilityNotSupported) as caught:
                        sandbox.stream(touch, **stream_options_)
                    self.assertEqual((caught.exception.capability, caught.exception.operation), (capability, "stream()"))
                    if run_options_ is None:
                        continue
                    with self.assertRaises(CapabilityNotSupported) as caught:
                        await sandbox.run(touch, **run_options_)
                    self.assertEqual((caught.exception.capability, caught.exception.operation), (capability, "run()"))
                # The capability comes first, even before an option no revision of the spec has.
                for call in (sandbox.attach("id"), sandbox.attach("id", fromOffset=3), sandbox.commands()):
                    with self.assertRaises(CapabilityNotSupported) as caught:
                        await call
                    self.assertEqual(caught.exception.capability, "attach")
                await sandbox.run(["true"])
            self.assertFalse(marker.exists(), "a refused command ran anyway")

    async def test_without_streaming_stream_refuses_before_looking_at_its_arguments(self) -> None:
        async with create_local_sandbox(capabilities={"streaming": False}) as sandbox:
            with self.assertRaises(CapabilityNotSupported) as caught:
                sandbox.stream([])
            self.assertEqual(caught.exception.capability, "streaming")
            self.assertEqual((await sandbox.run(["echo", "run still works"])).stdout, b"run still works\n")


class ClosedTest(SandboxTest):
    async def test_a_closed_sandbox_refuses_everything_first(self) -> None:
        await self.sandbox.close()
        with self.assertRaises(SandboxClosed):
            await self.sandbox.run(["true"])
        with self.assertRaises(SandboxClosed):
            self.sandbox.stream([])  # the sandbox's state comes before the arguments
        with self.assertRaises(SandboxClosed):
            await self.sandbox.attach("x")
        with self.assertRaises(SandboxClosed):
            await self.sandbox.run(["true"], signal=AbortController().signal)
        self.assertTrue(self.sandbox.closed)


class SettingsTest(SandboxTest):
    def test_bad_settings_name_the_setting(self) -> None:
        for settings, key in [
            ({"grace_ms": -1}, "options.graceMs"),
            ({"kill_wait_ms": math.nan}, "options.killWaitMs"),
            ({"high_water_mark": 0}, "options.highWaterMark"),
            ({"cwd": ""}, "options.cwd"),
            ({"env": {"": "x"}}, "options.env."),
            ({"capabilities": {"stdin": "no"}}, "options.capabilities.stdin"),
        ]:
            with self.subTest(settings), self.assertRaises(InvalidArgument) as caught:
                create_local_sandbox(**settings)
            self.assertEqual(caught.exception.key, key)
