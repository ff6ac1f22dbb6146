"""Awaiting teardown to its end, whatever happens to the task that awaits it."""

from __future__ import annotations

import asyncio
from typing import TypeVar

T = TypeVar("T")


async def complete(future: asyncio.Future[T]) -> T:
    """Awaits ``future`` to completion even if the awaiting task is cancelled meanwhile.

    Teardown that a cancellation interrupted would leave the command running,
    which is the one thing the contract exists to prevent. So a cancellation
    (an ``asyncio.timeout`` expiring, a ``TaskGroup`` failing, ``task.cancel()``)
    waits until ``future`` is done and is then raised as it arrived; the
    future's own outcome is dropped in favour of it.
    """
    interrupted: asyncio.CancelledError | None = None
    while not future.done():
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError as error:
            if future.done():
                break
            interrupted = error
    if interrupted is not None:
        if not future.cancelled():
            future.exception()  # seen: its outcome gives way to the cancellation
        raise interrupted
    return future.result()
