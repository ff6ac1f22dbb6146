"""An abort signal, the contract's ``signal`` option (spec section 9.4).

asyncio's own way to give up on ``run()`` or ``wait()`` is to cancel the
task, and that tears the command down as well. A signal is for the other
shape: one party starts commands, another decides to stop them, and the
caller wants ``AbortError`` with the partial result rather than a
cancellation.

    controller = AbortController()
    task = asyncio.create_task(sb.run(["make"], signal=controller.signal))
    ...
    controller.abort("user pressed stop")   # run() raises AbortError(result=...)

Call ``abort()`` from the thread running the event loop.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["AbortController", "AbortSignal"]


class AbortSignal:
    """Fires once; ``aborted`` and ``reason`` say whether and why."""

    __slots__ = ("_aborted", "_reason", "_listeners")

    def __init__(self) -> None:
        self._aborted = False
        self._reason: object = None
        self._listeners: list[Callable[[], None]] = []

    @property
    def aborted(self) -> bool:
        """True once the controller aborted."""
        return self._aborted

    @property
    def reason(self) -> object:
        """What ``abort()`` was given; the ``cause`` of the ``AbortError``."""
        return self._reason

    def add_listener(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Calls ``listener`` once when the signal fires; returns a function that unsubscribes it."""
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    def _fire(self, reason: object) -> None:
        if self._aborted:
            return
        self._aborted = True
        self._reason = reason
        listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener()

    @staticmethod
    def aborted_with(reason: object = None) -> AbortSignal:
        """A signal that has already fired (``run()`` with it starts nothing)."""
        signal = AbortSignal()
        signal._fire(reason)
        return signal


class AbortController:
    """Owns an ``AbortSignal`` and fires it."""

    __slots__ = ("signal",)

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: object = None) -> None:
        """Fires the signal (once; later calls change nothing)."""
        self.signal._fire(reason)
