"""``python -m pomdp_bench.run``: train suites of runs into a results store (see
:mod:`pomdp_bench.harness.run`)."""

import sys

from pomdp_bench.harness.run import main

if __name__ == "__main__":
    sys.exit(main())
