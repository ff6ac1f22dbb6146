"""The testee of the Python adapter: ``python3 python/testee.py`` (see ``sandstream_testee``).

    node packages/conformance/dist/cli.js --testee "python3 python/testee.py"
"""

import sys

from sandstream_testee import main

sys.exit(main())
