"""The harness: suites of runs, their execution, the results store and the analyses.

Data flows one way: a suite (``suites/*.yaml``) expands into :class:`~.spec.RunSpec`
runs (:mod:`.suites`), a backend (:mod:`.backends`) executes each
(:mod:`.training`), the store (:mod:`.store`) keeps every finished run, and the
analysis step (:mod:`.analysis`) stores what it finds about trained agents there
(:mod:`.analysis_records`). The leaderboards, report and figures are computed from the
store by :mod:`pomdp_bench.reporting`. ``python -m pomdp_bench.run``,
``python -m pomdp_bench.analyse`` and ``python -m pomdp_bench.report`` are the entry points.
"""
