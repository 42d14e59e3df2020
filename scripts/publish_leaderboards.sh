#!/usr/bin/env bash
# Reproduce every published leaderboard from scratch, or resume an interrupted publish.
#
#   bash scripts/publish_leaderboards.sh              # all suites, then the report
#   bash scripts/publish_leaderboards.sh memory       # only these suites, then the report
#
# The runs go into leaderboards/store, the local index of the published records
# (leaderboards/records, docs/reproducibility.md), keyed by the hash of their full spec:
# finished runs are skipped, so rerunning after an interruption (or on a fresh clone,
# whose index is built from the records) trains only what is missing. The report step
# then writes the suites' runs as records (each written once) and their weight files.
# To publish one suite measured afresh (a clean wall time), run it into an empty
# store and copy it over that suite's runs in the index:
#   python -m pomdp_bench.run --suite memory --results /tmp/fresh --no-report
#   python -c "from pomdp_bench.harness.store import ResultStore as S; S('leaderboards/store').replace_suite('memory', S('/tmp/fresh'))"
#   python -m pomdp_bench.report --results leaderboards/store --leaderboards leaderboards --published
#
# Cost on a 2-core machine, measured (docs/reproducibility.md, "Sweep timings"), each in one sweep from an empty
# store: on an AMD EPYC the memory suite 47.6 min on 2 workers, the horizon suite 56.3 min
# at commit 6624261 (as it stands: 460 runs, lstm at corridor 100 with 20 seeds; 61.0 min
# at 743a3ab with a cell since moved to horizon-long);
# on an Intel Xeon, about twice as fast, the memory suite 28.3 min (45390d6) and the
# horizon suite 29.3 min (681420e); the parity suite 15.6 min on 1 worker.
# horizon-long is not run by default: it is meant for a Ray cluster (111 CPU-hours at
# most, by --dry-run); `bash scripts/publish_leaderboards.sh horizon-long` runs it here.
# Run it in the background:
#   nohup bash scripts/publish_leaderboards.sh > publish.log 2>&1 &
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
STORE=leaderboards/store
SUITES=("$@")
if [ ${#SUITES[@]} -eq 0 ]; then SUITES=(memory horizon parity); fi

for suite in "${SUITES[@]}"; do
    # parity compares speeds: one run at a time, so no two runs share the machine.
    workers=()
    if [ "$suite" = parity ]; then workers=(--workers 1); fi
    "$PYTHON" -m pomdp_bench.run --suite "$suite" --results "$STORE" --no-report ${workers[@]+"${workers[@]}"}
done
# Probes and 2x/4x horizons of the trained runs (finished analyses are skipped).
"$PYTHON" -m pomdp_bench.analyse --results "$STORE" --no-progress
"$PYTHON" -m pomdp_bench.report --results "$STORE" --leaderboards leaderboards --published --docs docs/results
"$PYTHON" scripts/readme_answer.py
# The dry-run estimate reads the published runs: regenerate its data files.
PYTHONPATH=. "$PYTHON" scripts/measure_rates.py
"$PYTHON" scripts/memory_kinds_table.py
