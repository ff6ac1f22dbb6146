"""Sandstream for Python: the contract's local adapter on asyncio (standard library only).

    import asyncio
    from sandstream import create_local_sandbox

    async def main() -> None:
        async with create_local_sandbox() as sb:
            result = await sb.run(["echo", "hello"])
            print(result.stdout_text)
            async with sb.stream(["sh", "-c", "for i in 1 2 3; do echo $i; sleep 0.1; done"]) as proc:
                async for chunk in proc:
                    print(chunk.stream, chunk.data)
                print(await proc.wait())

    asyncio.run(main())

The guarantees are those of the Sandstream specification (``spec/1.5``):
byte-exact output, tagged chunks, one start per call, and termination of
the command's whole process group (SIGTERM, grace period, SIGKILL) on every
way of leaving its scope, this process's own death included (a guardian
process ends what it left, within ``termination.owner_loss_ms``).
"""

from .abort import AbortController, AbortSignal
from .errors import (
    AbortError,
    CallbackFailed,
    CapabilityNotSupported,
    CommandNotFound,
    InvalidArgument,
    InvalidState,
    SandboxClosed,
    SandstreamError,
    SpawnFailed,
    StdinClosed,
    TransportError,
)
from .manifest import CAPABILITIES, DEFAULT_GRACE_MS, DEFAULT_KILL_WAIT_MS, Termination, has_capability
from .options import DEFAULT_MAX_OUTPUT_BYTES, SIGNALS, ResourceLimits, TerminalSize
from .process import Process, ProcessLeakedWarning, StdinWriter
from .results import ExecResult, OutputChunk
from .sandbox import DEFAULT_HIGH_WATER_MARK, LocalSandbox, create_local_sandbox

#: The revision of the specification this package implements.
SPEC_VERSION = "1.5"

__all__ = [
    "AbortController",
    "AbortError",
    "AbortSignal",
    "CAPABILITIES",
    "CallbackFailed",
    "CapabilityNotSupported",
    "CommandNotFound",
    "DEFAULT_GRACE_MS",
    "DEFAULT_HIGH_WATER_MARK",
    "DEFAULT_KILL_WAIT_MS",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "ExecResult",
    "InvalidArgument",
    "InvalidState",
    "LocalSandbox",
    "OutputChunk",
    "Process",
    "ProcessLeakedWarning",
    "ResourceLimits",
    "SIGNALS",
    "SPEC_VERSION",
    "SandboxClosed",
    "SandstreamError",
    "SpawnFailed",
    "StdinClosed",
    "StdinWriter",
    "TerminalSize",
    "Termination",
    "TransportError",
    "create_local_sandbox",
    "has_capability",
]
