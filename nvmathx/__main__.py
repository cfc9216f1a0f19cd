"""``python -m nvmathx``: report the environment, run a short demo, check it against numpy."""

import sys

from ._main import main

sys.exit(main(sys.argv[1:]))
