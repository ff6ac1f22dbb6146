"""The testee's value form, error form and option mapping, without a kit (spec 1.3, sections 18.3 and 18.4)."""

from __future__ import annotations

import math
import unittest

from sandstream import (
    AbortError,
    CallbackFailed,
    CapabilityNotSupported,
    ExecResult,
    InvalidArgument,
    OutputChunk,
    SpawnFailed,
    TransportError,
)
from sandstream_testee.calls import attach_keywords, kill_arguments, run_keywords, stream_keywords
from sandstream_testee.errors import CallbackThrew, encode_error
from sandstream_testee.values import UNDEFINED, JsBigInt, Makers, Other, decode_value, encode_value


class ValueFormTest(unittest.TestCase):
    def test_json_values_are_themselves(self) -> None:
        for value in (None, True, 0, -3, 1.5, "text", [1, "a", None], {"a": [1, {"b": 2}]}):
            self.assertEqual(decode_value(value), value)
            self.assertEqual(encode_value(value), value)

    def test_what_json_cannot_carry_round_trips(self) -> None:
        wire = {"data": {"$bytes": "AP8K"}, "gone": {"$undefined": True}, "n": {"$number": "-Infinity"},
                "list": [{"$bytes": ""}, {"$number": "Infinity"}], "big": {"$bigint": "12345678901234567890"}}
        decoded = decode_value(wire)
        self.assertEqual(decoded["data"], b"\x00\xff\n")
        self.assertIs(decoded["gone"], UNDEFINED)
        self.assertEqual(decoded["n"], -math.inf)
        self.assertEqual(encode_value(decoded), wire)

    def test_an_integer_beyond_the_safe_range_is_a_float(self) -> None:
        self.assertEqual(decode_value(2**53 - 1), 2**53 - 1)
        self.assertIsInstance(decode_value(2**53 - 1), int)
        self.assertIsInstance(decode_value({"maxOutputBytes": 2**53})["maxOutputBytes"], float)
        self.assertIsInstance(decode_value(-(2**53)), float)

    def test_nan_travels_as_a_number_form(self) -> None:
        self.assertTrue(math.isnan(decode_value({"$number": "NaN"})))
        self.assertEqual(encode_value(math.nan), {"$number": "NaN"})

    def test_a_bigint_and_a_symbol_are_no_values_an_adapter_accepts(self) -> None:
        big = decode_value({"$bigint": "10"})
        other = decode_value({"$other": "Symbol(x)"})
        self.assertIsInstance(big, JsBigInt)
        self.assertNotIsInstance(big, int)
        self.assertIsInstance(other, Other)
        self.assertEqual(encode_value(other), {"$other": "Symbol(x)"})

    def test_an_object_with_dollar_keys_is_wrapped(self) -> None:
        wire = {"$object": {"$bytes": "not bytes", "plain": 1}}
        self.assertEqual(decode_value(wire), {"$bytes": "not bytes", "plain": 1})
        self.assertEqual(encode_value({"$bytes": "not bytes", "plain": 1}), wire)

    def test_functions_and_signals_are_made_by_the_makers(self) -> None:
        made: list[tuple[str, object, object]] = []
        makers = Makers(lambda id, throws: made.append(("fn", id, throws)) or "a function",
                        lambda id, aborted, reason: made.append(("signal", id, (aborted, reason))) or "a signal")
        options = decode_value({"onOutput": {"$function": "c1", "throws": True},
                                "signal": {"$signal": "c2", "aborted": True, "reason": {"$bytes": "eA=="}}}, makers)
        self.assertEqual(options, {"onOutput": "a function", "signal": "a signal"})
        self.assertEqual(made, [("fn", "c1", True), ("signal", "c2", (True, b"x"))])
        # Without makers (a reason, a result), nothing is called.
        self.assertIsInstance(decode_value({"$function": "c3", "throws": False}), Other)

    def test_results_and_chunks_have_the_spec_names(self) -> None:
        result = ExecResult(exit_code=None, signal="SIGKILL", stdout=b"out", stderr=b"", streamed=False,
                            timed_out=True, stdout_truncated=True, duration_ms=12.5)
        self.assertEqual(encode_value(result), {
            "exitCode": None, "signal": "SIGKILL", "stdout": {"$bytes": "b3V0"}, "stderr": {"$bytes": ""},
            "streamed": False, "timedOut": True, "stdoutTruncated": True, "stderrTruncated": False, "durationMs": 12.5,
        })
        self.assertEqual(encode_value(OutputChunk("stderr", b"\xff")), {"stream": "stderr", "data": {"$bytes": "/w=="}})


class ErrorFormTest(unittest.TestCase):
    def test_invalid_argument_carries_key_and_reason(self) -> None:
        wire = encode_error(InvalidArgument("options.timeout", "must be positive"))
        self.assertEqual(wire["name"], "InvalidArgument")
        self.assertEqual(wire["code"], "INVALID_ARGUMENT")
        self.assertEqual((wire["key"], wire["reason"]), ("options.timeout", "must be positive"))

    def test_capability_error_carries_capability_and_operation(self) -> None:
        wire = encode_error(CapabilityNotSupported("attach", "stream()"))
        self.assertEqual((wire["code"], wire["capability"], wire["operation"]),
                         ("CAPABILITY_NOT_SUPPORTED", "attach", "stream()"))

    def test_abort_carries_its_partial_result_and_its_reason_as_a_value(self) -> None:
        wire = encode_error(AbortError(ExecResult(signal="SIGTERM", stdout=b"partial"), cause=Other("Error: stop")))
        self.assertEqual(wire["name"], "AbortError")
        self.assertEqual(wire["code"], "ABORTED")
        self.assertEqual(wire["result"]["stdout"], {"$bytes": "cGFydGlhbA=="})
        self.assertEqual(wire["cause"]["thrown"], {"$other": "Error: stop"})
        self.assertNotIn("cause", encode_error(AbortError(None)))

    def test_a_throwing_callback_is_named_in_the_cause(self) -> None:
        wire = encode_error(CallbackFailed(ExecResult(exit_code=0), cause=CallbackThrew("c7")))
        self.assertEqual(wire["code"], "CALLBACK_FAILED")
        self.assertEqual(wire["cause"]["callback"], "c7")
        self.assertNotIn("code", wire["cause"])

    def test_spawn_failed_carries_argv_and_transport_its_command(self) -> None:
        wire = encode_error(SpawnFailed(["nope", b"\xff"], "ENOENT"))
        self.assertEqual((wire["code"], wire["argv"]), ("SPAWN_FAILED", ["nope", "\ufffd"]))
        self.assertNotIn("reason", wire)
        self.assertEqual(encode_error(TransportError("lost", command_id="42"))["commandId"], "42")

    def test_an_error_outside_the_contract_has_no_code(self) -> None:
        wire = encode_error(RuntimeError("a bug"))
        self.assertEqual(wire, {"name": "RuntimeError", "message": "a bug"})


class OptionMappingTest(unittest.TestCase):
    def test_spec_names_become_keywords(self) -> None:
        keywords = run_keywords(["true"], {"timeout": 1500, "maxOutputBytes": 10, "limits": {"cpuSeconds": 2}})
        self.assertEqual(keywords, {"timeout": 1.5, "max_output_bytes": 10, "limits": {"cpu_seconds": 2}})
        self.assertEqual(stream_keywords(["true"], {"stdin": "pipe", "background": False}),
                         {"stdin": "pipe", "background": False})

    def test_undefined_is_absent(self) -> None:
        self.assertEqual(run_keywords(["true"], UNDEFINED), {})
        self.assertEqual(run_keywords(["true"], {"timeout": UNDEFINED, "limits": {"openFiles": UNDEFINED}}),
                         {"limits": {"open_files": None}})

    def test_an_unknown_key_is_refused_even_when_undefined(self) -> None:
        for mapping, key in ((run_keywords, "stdin"), (stream_keywords, "constructor"), (run_keywords, "[/x")):
            with self.subTest(key=key), self.assertRaises(InvalidArgument) as caught:
                mapping(["true"], {"timeout": 5, key: UNDEFINED})
            self.assertEqual(caught.exception.key, f"options.{key}")

    def test_unknown_and_misplaced_options_are_named(self) -> None:
        cases = [(run_keywords, {"nonsense": 1}, "options.nonsense"), (run_keywords, {"stdin": "pipe"}, "options.stdin"),
                 (stream_keywords, {"maxOutputBytes": 10}, "options.maxOutputBytes"),
                 (run_keywords, "fast", "options"), (run_keywords, None, "options")]
        for mapping, options, key in cases:
            with self.subTest(options=options), self.assertRaises(InvalidArgument) as caught:
                mapping(["true"], options)
            self.assertEqual(caught.exception.key, key)

    def test_attach_passes_every_option_on_for_the_adapter_to_judge(self) -> None:
        self.assertEqual(attach_keywords(UNDEFINED), {})
        self.assertEqual(attach_keywords({"replay": False}), {"replay": False})
        # A key of no revision the testee knows reaches the adapter, which refuses it: dropping it
        # here would let the kit see an unknown option accepted.
        self.assertEqual(attach_keywords({"replay": UNDEFINED, "fromOffset": 3}), {"fromOffset": 3})
        with self.assertRaises(InvalidArgument) as caught:
            attach_keywords(None)
        self.assertEqual(caught.exception.key, "options")

    def test_a_bad_argv_is_named_before_bad_options(self) -> None:
        with self.assertRaises(InvalidArgument) as caught:
            run_keywords([], {"nonsense": 1})
        self.assertEqual(caught.exception.key, "argv")

    def test_kill_without_a_signal_takes_the_default(self) -> None:
        self.assertEqual(kill_arguments(UNDEFINED), ())
        self.assertEqual(kill_arguments("SIGKILL"), ("SIGKILL",))


if __name__ == "__main__":
    unittest.main()
