"""``python -m pomdp_bench.analyse``: memory probes and horizon generalisation of a
store's trained runs, stored back in the store (see :mod:`pomdp_bench.harness.analysis`)."""

import sys

from pomdp_bench.harness.analysis import main

if __name__ == "__main__":
    sys.exit(main())
