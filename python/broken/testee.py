"""A broken testee: ``python3 python/broken/testee.py <defect>`` serves the Python adapter with that one defect.

The defects are those of ``defects.py`` (leader-only-kill, dropped-last-chunk,
exit-status-for-signal, late-capability-error); the kit must catch each.
"""

import os
import sys

# The adapter and the testee live one directory up.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from defects import DEFECTS  # noqa: E402

from sandstream_testee import serve_stdio  # noqa: E402

if len(sys.argv) != 2 or sys.argv[1] not in DEFECTS:
    print(f"usage: testee.py <defect>, one of: {', '.join(DEFECTS)}", file=sys.stderr)
    sys.exit(2)
sys.exit(serve_stdio(DEFECTS[sys.argv[1]]()))
