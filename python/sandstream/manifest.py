"""What a sandbox states about itself: its capability manifest and its termination settings."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from .errors import InvalidArgument

__all__ = [
    "CAPABILITIES",
    "DEFAULT_GRACE_MS",
    "DEFAULT_KILL_WAIT_MS",
    "OWNER_LOSS_MARGIN_MS",
    "Termination",
    "has_capability",
    "local_manifest",
]

#: Every capability of spec 1.5 (those of 1.2, then ``pty``), in manifest order.
CAPABILITIES = (
    "streaming",
    "stdin",
    "resource-limits",
    "user",
    "binary-output",
    "attach",
    "attach-reconnect",
    "replay-full",
    "replay-tail",
    "pty",
)

# What an absent optional capability means: binary-output arrived in 1.1 and
# absent meant byte-exact output; the 1.2 ones, and pty (1.5), are off when absent.
_ABSENT_MEANS = {"binary-output": True}

#: Time between SIGTERM and SIGKILL, as the spec and the TypeScript runtime default it.
DEFAULT_GRACE_MS = 2000
#: Wait for the end after SIGKILL before settling with ``TransportError``.
DEFAULT_KILL_WAIT_MS = 5000
#: What the bound of owner loss adds to the grace period: the guardian sees the
#: owner's end at once (end-of-file), so this is the margin for a loaded host
#: to schedule it and for the kernel to end what SIGKILL reached.
OWNER_LOSS_MARGIN_MS = 1000


def has_capability(manifest: Mapping[str, bool], capability: str) -> bool:
    """Whether ``manifest`` advertises ``capability``, an absent optional one's default applied."""
    value = manifest.get(capability)
    if isinstance(value, bool):
        return value
    return _ABSENT_MEANS.get(capability, False)


def local_manifest(turned_off: Mapping[str, object] | None) -> dict[str, bool]:
    """The manifest of a local sandbox: what this machine can do, minus what the caller turned off.

    ``user`` needs root (switching accounts needs the privilege). Background
    commands (``attach``) are not implemented by this adapter, so it says so.
    ``pty`` (spec 1.5) needs ``os.openpty`` and ``os.login_tty``.
    ``turned_off`` maps capability names to booleans; ``False`` turns one off,
    ``True`` never turns on what the machine cannot do.
    """
    available = {
        "streaming": True,
        "stdin": True,
        "resource-limits": True,
        "user": os.geteuid() == 0,
        "binary-output": True,
        "attach": False,
        # A pseudo-terminal needs the standard library's openpty and login_tty (Python 3.11, Linux).
        "pty": hasattr(os, "openpty") and hasattr(os, "login_tty"),
    }
    if turned_off is None:
        return available
    if not isinstance(turned_off, Mapping):
        raise InvalidArgument("options.capabilities", "must be a mapping of capability names to booleans")
    manifest = dict(available)
    for name, enabled in turned_off.items():
        key = f"options.capabilities.{name}"
        if name not in available:
            raise InvalidArgument(key, "unknown capability")
        if not isinstance(enabled, bool):
            raise InvalidArgument(key, "must be a boolean")
        if not enabled:
            manifest[name] = False
    return manifest


@dataclass(frozen=True, slots=True)
class Termination:
    """How a sandbox terminates a command (SS-TERM-1, SS-OWNER-2), in milliseconds.

    SIGTERM to the process group, SIGKILL ``grace_ms`` later if anything is
    left, then up to ``kill_wait_ms`` for the end before ``TransportError``.
    ``owner_loss_ms`` bounds how long a command's tree may outlive the
    process that started it, when that process ends without ending it
    (SIGKILL, out of memory): the guardian's bound (spec 1.4, section 9.11).
    """

    grace_ms: float
    kill_wait_ms: float
    owner_loss_ms: float

    def to_wire(self) -> dict[str, float]:
        """``{"graceMs", "killWaitMs", "ownerLossMs"}``, the spec's ``SandboxTermination``."""
        return {"graceMs": self.grace_ms, "killWaitMs": self.kill_wait_ms, "ownerLossMs": self.owner_loss_ms}
