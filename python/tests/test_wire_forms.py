"""The JSON forms a testee sends: results, chunks, errors, the manifest, held to the spec's schema and fixtures."""

from __future__ import annotations

import json
import unittest

import sandstream
from sandstream import (
    AbortError,
    CallbackFailed,
    CapabilityNotSupported,
    ExecResult,
    InvalidArgument,
    OutputChunk,
    SpawnFailed,
    TransportError,
    create_local_sandbox,
    has_capability,
)
from sandstream.wire import run_options, stream_options

from .support import SPEC_DIR


def schema() -> dict:
    path = SPEC_DIR / "schema.json"
    if not path.exists():
        raise unittest.SkipTest("the repository's spec/1.5 is not next to python/")
    return json.loads(path.read_text())


def consts(definition: dict) -> set[str]:
    return {option["const"] for option in definition["anyOf"]}


class ExecResultWireTest(unittest.TestCase):
    def test_the_nine_fields_with_bytes_in_canonical_base64(self) -> None:
        result = ExecResult(exit_code=0, stdout=bytes(range(256)), stderr=b"\xff", duration_ms=1.5)
        wire = result.to_wire()
        self.assertEqual(set(wire), set(schema()["$defs"]["ExecResult"]["properties"]))
        self.assertEqual(wire["stderr"], "/w==")
        self.assertEqual(ExecResult.from_wire(json.loads(json.dumps(wire))), result)

    def test_every_valid_fixture_round_trips(self) -> None:
        schema()
        fixtures = sorted((SPEC_DIR / "examples" / "ExecResult").glob("*.json"))
        self.assertGreater(len(fixtures), 5)
        for path in fixtures:
            with self.subTest(path.name):
                wire = json.loads(path.read_text())
                self.assertEqual(ExecResult.from_wire(wire).to_wire(), wire)

    def test_every_invalid_fixture_is_refused(self) -> None:
        schema()
        for kind, decode in (("ExecResult", ExecResult.from_wire), ("OutputChunk", OutputChunk.from_wire)):
            fixtures = sorted((SPEC_DIR / "invalid" / kind).glob("*.json"))
            self.assertGreater(len(fixtures), 5)
            for path in fixtures:
                with self.subTest(f"{kind}/{path.name}"), self.assertRaises(InvalidArgument):
                    decode(json.loads(path.read_text()))

    def test_the_key_names_the_failing_field(self) -> None:
        wire = ExecResult(signal="SIGKILL").to_wire()
        wire["exitCode"] = 1
        with self.assertRaises(InvalidArgument) as caught:
            ExecResult.from_wire(wire)
        self.assertEqual(caught.exception.key, "result/exitCode")

    def test_text_views_replace_invalid_utf8_and_keep_a_bom(self) -> None:
        result = ExecResult(stdout=b"\xef\xbb\xbfok \xff\xfe end", stderr="é".encode()[:1])
        self.assertEqual(result.stdout_text, "\ufeffok \ufffd\ufffd end")
        self.assertEqual(result.stderr_text, "\ufffd")
        self.assertNotIn("stdout_text", json.dumps(result.to_wire()))


class ChunkWireTest(unittest.TestCase):
    def test_chunk_round_trip(self) -> None:
        chunk = OutputChunk("stderr", b"\x00\x01partial")
        self.assertEqual(chunk.to_wire(), {"stream": "stderr", "data": "AAFwYXJ0aWFs"})
        self.assertEqual(OutputChunk.from_wire(chunk.to_wire()), chunk)


class ErrorWireTest(unittest.TestCase):
    def test_codes_are_exactly_the_schemas(self) -> None:
        classes = [getattr(sandstream, name) for name in sandstream.__all__]
        codes = {cls.code for cls in classes if isinstance(cls, type) and issubclass(cls, sandstream.SandstreamError) and cls.code}
        self.assertEqual(codes, consts(schema()["$defs"]["ErrorCode"]))

    def test_each_error_carries_its_fields(self) -> None:
        partial = ExecResult(signal="SIGTERM", stdout=b"so far")
        cause = ValueError("boom")
        cases = [
            (CapabilityNotSupported("stdin", "stream()"), {"capability": "stdin", "operation": "stream()"}),
            (InvalidArgument("options.timeout", "must be positive"), {"key": "options.timeout", "reason": "must be positive"}),
            (SpawnFailed(["nope", b"\xff"], "ENOENT"), {"argv": ["nope", "\ufffd"]}),
            (AbortError(partial, cause="stop"), {"result": partial.to_wire()}),
            (AbortError(None), {}),
            (CallbackFailed(partial, cause=cause), {"result": partial.to_wire()}),
            (TransportError("lost", command_id="c1"), {"commandId": "c1"}),
        ]
        for error, fields in cases:
            with self.subTest(type(error).__name__):
                wire = json.loads(json.dumps(error.to_wire()))
                self.assertEqual(wire, {"code": error.code, "message": str(error), **fields})
        self.assertIs(CallbackFailed(None, cause=cause).__cause__, cause)
        self.assertEqual(AbortError(None, cause="stop").cause, "stop")


class ManifestTest(unittest.TestCase):
    def test_the_manifest_is_valid_against_the_schema(self) -> None:
        definition = schema()["$defs"]["CapabilityManifest"]
        manifest = create_local_sandbox().capabilities
        self.assertTrue(set(definition["required"]) <= set(manifest))
        self.assertTrue(set(manifest) <= set(definition["properties"]))
        self.assertTrue(all(type(value) is bool for value in manifest.values()))
        self.assertEqual(set(sandstream.CAPABILITIES), consts(schema()["$defs"]["Capability"]))
        self.assertFalse(has_capability({}, "pty"))
        # This adapter has no background commands, and says so.
        self.assertFalse(has_capability(manifest, "attach"))
        self.assertTrue(has_capability(manifest, "binary-output"))
        self.assertEqual(json.loads(json.dumps(manifest)), manifest)

    def test_capabilities_can_be_turned_off_never_on(self) -> None:
        manifest = create_local_sandbox(capabilities={"stdin": False, "attach": True}).capabilities
        self.assertFalse(manifest["stdin"])
        self.assertFalse(manifest["attach"])
        with self.assertRaises(InvalidArgument) as caught:
            create_local_sandbox(capabilities={"teleport": False})
        self.assertEqual(caught.exception.key, "options.capabilities.teleport")

    def test_the_manifest_cannot_be_changed_through_the_property(self) -> None:
        sandbox = create_local_sandbox()
        sandbox.capabilities["stdin"] = False
        self.assertTrue(sandbox.capabilities["stdin"])

    def test_termination_defaults_are_the_local_adapters(self) -> None:
        self.assertEqual(create_local_sandbox().termination.to_wire(), {"graceMs": 2000, "killWaitMs": 5000, "ownerLossMs": 3000})
        nine = create_local_sandbox(grace_ms=9000).termination
        self.assertEqual((nine.kill_wait_ms, nine.owner_loss_ms), (10000, 10000))


class WireOptionsTest(unittest.TestCase):
    def test_spec_names_become_keywords_and_milliseconds_seconds(self) -> None:
        self.assertEqual(
            run_options({"timeout": 1500, "maxOutputBytes": 10, "limits": {"cpuSeconds": 1}}),
            {"timeout": 1.5, "max_output_bytes": 10, "limits": {"cpu_seconds": 1}},
        )
        self.assertEqual(stream_options({"stdin": "pipe", "background": False}), {"stdin": "pipe", "background": False})
        self.assertGreater(run_options({"timeout": 1e-320})["timeout"], 0)

    def test_unknown_keys_non_objects_and_nulls_are_refused_with_the_spec_key(self) -> None:
        for convert, options, key in [
            (run_options, {"nonsense": 1}, "options.nonsense"),
            (run_options, {"stdin": "pipe"}, "options.stdin"),
            (stream_options, {"maxOutputBytes": 10}, "options.maxOutputBytes"),
            (stream_options, "fast", "options"),
            (run_options, {"cwd": None}, "options.cwd"),
        ]:
            with self.subTest(options), self.assertRaises(InvalidArgument) as caught:
                convert(options)
            self.assertEqual(caught.exception.key, key)


if __name__ == "__main__":
    unittest.main()
