"""The kickstarting benchmark's parts, by job; ``benchmarks/kickstart.py`` is its command line.

* ``kickstart_bench.plan``: tasks, student arms (add an arm in ``ARMS``), configs and the
  grid of trials with what makes each one (its spec, compared when a run resumes);
* ``kickstart_bench.results``: what a trial measured, read back from its Tune folder;
* ``kickstart_bench.run``: Ray Tune runs of the grid (resumable) and the overhead timing;
* ``kickstart_bench.report``: tables, plots, the RESULTS.md parts and the JSON file.

Like the script, nothing here imports Ray or torch at module level.
"""
