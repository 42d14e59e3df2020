"""``python -m pomdp_bench.report``: leaderboard CSVs and figures from a results store,
without retraining (see :mod:`pomdp_bench.reporting.report`)."""

import sys

from pomdp_bench.reporting.report import main

if __name__ == "__main__":
    sys.exit(main())
