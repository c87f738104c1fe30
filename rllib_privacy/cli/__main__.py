"""``python -m rllib_privacy.cli``: the ``rllib`` command without its console script."""

import sys

from rllib_privacy.cli.train import rllib_main

sys.exit(rllib_main())
