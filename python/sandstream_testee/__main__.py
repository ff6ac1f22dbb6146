"""``python3 -m sandstream_testee``: serves the local adapter over the testee protocol."""

import sys

from .main import main

sys.exit(main())
