"""A testee for the Sandstream conformance kit: the Python adapter served over the testee protocol.

The kit checks an adapter in any language through a program that serves it
as NDJSON on its standard streams (spec 1.3, section 18; ADR-0038). This one
serves ``sandstream.create_local_sandbox``:

    node packages/conformance/dist/cli.js --testee "python3 python/testee.py"

or, with ``python`` on ``PYTHONPATH``, ``python3 -m sandstream_testee``, or, with the
package installed (``pip install ./python``), the command ``sandstream-testee``.
``serve_stdio(factory)`` serves any factory of sandboxes with this API.
"""

from .main import main, serve_stdio
from .server import PROTOCOL, SYNC_OPS, Testee

__all__ = ["PROTOCOL", "SYNC_OPS", "Testee", "main", "serve_stdio"]
