"""The testee's requests on a Process (spec section 18.2): each the one call of that name.

A mixin of :class:`~sandstream_testee.server.Testee`, which holds the tables
these look things up in; kept apart so each module stays one reading.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sandstream import Process

from .calls import kill_arguments
from .errors import ProtocolMisuse
from .values import UNDEFINED, encode_result, encode_value

__all__ = ["ProcessRequests"]


class ProcessRequests:
    """The ``_op_*`` handlers whose request names a Process (or its iterator)."""

    _iterators: dict[str, Any]
    _iterator_process: dict[str, str]

    if TYPE_CHECKING:  # the Testee provides these: its id counter, its tables' lookup, the wire's decoding
        def _id(self, prefix: str) -> str: ...
        def _lookup(self, table: dict[str, Any], key: object, what: str) -> Any: ...
        def _process(self, request: dict[str, Any]) -> Process: ...
        def _arg(self, wire: object) -> object: ...

    def _op_props(self, request: dict[str, Any]) -> dict[str, Any]:
        return self._props_of(self._process(request))

    @staticmethod
    def _props_of(proc: Process) -> dict[str, Any]:
        pid, command_id = proc.pid, proc.command_id
        return {
            # The contract's "not known" is undefined, which Python spells None.
            "pid": encode_value(UNDEFINED if pid is None else pid),
            "commandId": encode_value(UNDEFINED if command_id is None else command_id),
            "exited": encode_value(proc.exited),
            "skipped": encode_value(getattr(proc, "skipped", UNDEFINED)),
        }

    def _op_stdin(self, request: dict[str, Any]) -> dict[str, Any]:
        writer = self._process(request).stdin
        return {"writer": False} if writer is None else {"writer": True, "closed": encode_value(writer.closed)}

    def _op_iterate(self, request: dict[str, Any]) -> dict[str, str]:
        iterator = self._process(request).__aiter__()
        key = self._id("i")
        self._iterators[key] = iterator
        self._iterator_process[key] = request["process"]
        return {"iterator": key}

    async def _op_next(self, request: dict[str, Any]) -> dict[str, Any]:
        iterator = self._lookup(self._iterators, request.get("iterator"), "iterator")
        try:
            chunk = await iterator.__anext__()
        except StopAsyncIteration:
            return {"done": True, "value": encode_value(UNDEFINED)}
        return {"done": False, "value": encode_value(chunk)}

    async def _op_return(self, request: dict[str, Any]) -> dict[str, Any]:
        # JavaScript's iterator.return() is Python's aclose(): leaving the loop leaves the scope.
        await self._lookup(self._iterators, request.get("iterator"), "iterator").aclose()
        return {"done": True, "value": encode_value(UNDEFINED)}

    async def _op_started(self, request: dict[str, Any]) -> None:
        await self._process(request).started()

    async def _op_wait(self, request: dict[str, Any]) -> object:
        return encode_result(await self._process(request).wait())

    async def _op_kill(self, request: dict[str, Any]) -> None:
        await self._process(request).kill(*kill_arguments(self._arg(request.get("signal"))))

    async def _op_dispose(self, request: dict[str, Any]) -> None:
        await self._process(request).aclose()

    async def _op_detach(self, request: dict[str, Any]) -> None:
        detach = getattr(self._process(request), "detach", None)
        if detach is None:
            raise ProtocolMisuse("the Process has no detach(): it is no background Process")
        await detach()

    def _writer(self, request: dict[str, Any]) -> Any:
        stdin = self._process(request).stdin
        if stdin is None:
            raise ProtocolMisuse("the Process has no stdin writer")
        return stdin

    async def _op_write(self, request: dict[str, Any]) -> None:
        await self._writer(request).write(self._arg(request.get("data")))

    async def _op_end(self, request: dict[str, Any]) -> None:
        await self._writer(request).end()

    async def _op_resize(self, request: dict[str, Any]) -> None:
        # Spec 1.5: a Process without resize() is one whose hello-time lacks named it.
        resize = getattr(self._process(request), "resize", None)
        if resize is None:
            raise ProtocolMisuse("the Process has no resize()")
        await resize(self._arg(request.get("cols")), self._arg(request.get("rows")))
