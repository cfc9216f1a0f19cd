"""``python -m benchmarks SUITE [...]``: see benchmarks/README.md."""

import sys

from ._cli import main

sys.exit(main())
