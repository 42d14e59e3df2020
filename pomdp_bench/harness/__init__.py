"""The harness: suites of runs, their execution, the results store and the leaderboards.

Data flows one way: a suite (``suites/*.yaml``) expands into :class:`~.spec.RunSpec`
runs (:mod:`.suites`), a backend (:mod:`.backends`) executes each
(:mod:`.training`), the store (:mod:`.store`) keeps every finished run, and the
leaderboard (:mod:`.leaderboard`), report (:mod:`.report`) and figures
(:mod:`.plots`) are computed from the store. ``python -m pomdp_bench.run`` and
``python -m pomdp_bench.report`` are the entry points.
"""
