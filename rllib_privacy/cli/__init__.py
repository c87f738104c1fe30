"""The ``rllib`` command (``rllib train -f FILE``) and the ``rllib-privacy`` tools.

- [rllib_privacy.cli.train][]: ``rllib train``; it checks the experiment file and the
  options before Ray starts ([rllib_privacy.cli.preflight][],
  [rllib_privacy.cli.scheduler][]), says how many trials each experiment has and about how
  long it takes ([rllib_privacy.cli.estimate][]), runs the experiments
  ([rllib_privacy.cli.launch][], with Tune's loggers and messages set by
  [rllib_privacy.cli.tune_output][]) and prints their summaries
  ([rllib_privacy.cli.summary][]).
- [rllib_privacy.cli.tools][]: ``rllib-privacy``, one module per tool
  (``list_registered``, ``pate_epsilon``, ``plot``, ``ilm_evaluate``).

Only the standard library and this package's constant modules are imported when these
modules load: ``rllib --help`` and ``rllib-privacy --help`` answer without importing Ray,
torch or gymnasium. Each command imports what it needs when it runs.
"""

from rllib_privacy.cli.tools import tools_main
from rllib_privacy.cli.train import rllib_main

__all__ = ["rllib_main", "tools_main"]
