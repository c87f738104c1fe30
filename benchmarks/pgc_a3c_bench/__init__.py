"""The PGC-A3C benchmark's parts, by job; ``benchmarks/pgc_a3c.py`` is its command line.

* ``pgc_a3c_bench.plan``: the arms (``default_arms``), rows (arm × ε) and the Tune
  variant of each trial;
* ``pgc_a3c_bench.results``: FST statistics, a record per finished trial, speed results;
* ``pgc_a3c_bench.documents``: a run's JSON file (rewritten as trials finish) and merging;
* ``pgc_a3c_bench.run``: every trial in one Tuner, and the speed comparison;
* ``pgc_a3c_bench.report``: tables next to the paper's, notes, plots, RESULTS.md.

Like the script, nothing here imports Ray or torch at module level.
"""
