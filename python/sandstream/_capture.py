"""What ``run()`` keeps of one stream: the first ``cap`` bytes, and whether more was written."""

from __future__ import annotations


class Capture:
    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._parts: list[bytes] = []
        self._kept = 0
        self.truncated = False

    def add(self, data: bytes) -> None:
        """Keeps what fits; the rest is dropped and flagged (the command is still drained)."""
        room = self._cap - self._kept
        if len(data) > room:
            self.truncated = True
            data = data[:room]
        if data:
            self._parts.append(data)
            self._kept += len(data)

    def bytes(self) -> bytes:
        return b"".join(self._parts)
