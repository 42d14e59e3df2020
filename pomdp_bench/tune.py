"""``python -m pomdp_bench.tune``: tune an agent's settings for one task with Optuna (see
:mod:`pomdp_bench.harness.tuning`; needs the ``[tune]`` extra)."""

import sys

from pomdp_bench.harness.tuning import main

if __name__ == "__main__":
    sys.exit(main())
