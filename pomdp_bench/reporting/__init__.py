"""Reporting: leaderboard tables, figures, the page and the docs' results pages, all
computed from a results store, never from an agent (no torch).

``python -m pomdp_bench.report`` runs :mod:`.report`. It reads the store's records
(:mod:`pomdp_bench.harness.spec`, :mod:`pomdp_bench.harness.store`, what analyses store:
:mod:`pomdp_bench.harness.analysis_records`, a run's cell: :mod:`pomdp_bench.harness.cells`),
the env cards (:mod:`pomdp_bench.envs.cards`) and plain data (the kind names:
:mod:`pomdp_bench.memory_names`); ``tests/test_import_graph.py`` holds it to that.
"""
