"""The kit's arguments, as a JavaScript caller gave them, to the Python adapter's keywords.

The kit sends ``RunOptions`` and ``StreamOptions`` with the spec's camelCase
names and ``timeout`` in milliseconds; ``sandstream.wire`` maps those to the
keywords of ``run()`` and ``stream()`` without judging the values, so the
adapter rejects a wrong one under the spec's key. What is left here is
JavaScript's: an option set to ``undefined`` is absent, and a bag that is
``null`` is no object.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sandstream import InvalidArgument
from sandstream.options import check_argv
from sandstream.wire import run_options, stream_options

from .values import UNDEFINED

__all__ = ["run_keywords", "stream_keywords", "attach_keywords", "kill_arguments"]


def _limits_absent(options: object) -> object:
    """The bag with each ``undefined`` limit as ``None``, which the adapter reads as absent.

    The name of such a limit is still checked, as JavaScript's adapters check it.
    """
    if not isinstance(options, dict) or not isinstance(options.get("limits"), dict):
        return options
    limits = {key: None if value is UNDEFINED else value for key, value in options["limits"].items()}
    return {**options, "limits": limits}


def _keywords(argv: object, options: object, mapping: Callable[[object], dict[str, Any]]) -> dict[str, Any]:
    try:
        if options is UNDEFINED:
            return {}
        if options is None:
            raise InvalidArgument("options", "must be an object, got null")
        keywords = mapping(_limits_absent(options))
    except InvalidArgument:
        # The adapter looks at argv before its options: a bad argv is named first,
        # by the adapter's own check, as a call with both wrong would name it.
        check_argv(argv)
        raise
    # An option set to undefined is absent, once its key was found to be one the call takes:
    # an unknown key is refused whatever its value, as in JavaScript.
    return {name: value for name, value in keywords.items() if value is not UNDEFINED}


def run_keywords(argv: object, options: object) -> dict[str, Any]:
    """The keywords of ``LocalSandbox.run()`` for the kit's ``RunOptions``; raises ``InvalidArgument``."""
    return _keywords(argv, options, run_options)


def stream_keywords(argv: object, options: object) -> dict[str, Any]:
    """The keywords of ``LocalSandbox.stream()`` for the kit's ``StreamOptions``; raises ``InvalidArgument``."""
    return _keywords(argv, options, stream_options)


def attach_keywords(options: object) -> dict[str, Any]:
    """The keywords of ``attach()`` for the kit's ``AttachOptions``: every key the kit sent.

    ``replay`` is the one option of 1.3; any other key is passed on as it is,
    for the adapter to refuse (``InvalidArgument``, SS-ARG-2), never dropped
    here where the kit could not see it accepted. A bag that is ``null`` is
    no object, as in JavaScript.
    """
    if options is UNDEFINED:
        return {}
    if not isinstance(options, dict):
        raise InvalidArgument("options", f"must be an object, got {'null' if options is None else type(options).__name__}")
    return {key: value for key, value in options.items() if value is not UNDEFINED}


def kill_arguments(signal: object) -> tuple[object, ...]:
    """``kill()`` with no argument is ``kill("SIGTERM")``: an ``undefined`` signal is left to the default."""
    return () if signal is UNDEFINED else (signal,)
