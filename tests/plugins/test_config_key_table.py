"""The config-key table `rllib train` reads before Ray is in sync with the config classes."""

from __future__ import annotations

import json
import subprocess
import sys

from rllib_privacy.experiments import key_table


def test_table_file_matches_the_config_classes():
    stored = json.loads(key_table.TABLE_PATH.read_text())
    # Built in a fresh process: tests in this one register extra trainables with Tune.
    code = (
        "import json; from rllib_privacy.experiments import key_table; "
        "print(json.dumps(key_table.build_table()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    built = json.loads(done.stdout.strip().splitlines()[-1])
    assert stored == built, (
        "rllib_privacy/experiments/config_keys.json is out of date: run "
        "`python -m rllib_privacy.experiments.key_table --write`"
    )


def test_table_entry_gives_the_class_keys():
    from ray.tune.registry import get_trainable_cls

    from rllib_privacy.algorithms.config_keys import allowed_config_keys

    entry = key_table.algorithm_keys("LDPA3C")
    assert entry is not None and entry.config_class == "LDPA3CConfig"
    assert entry.keys == allowed_config_keys(get_trainable_cls("LDPA3C").get_default_config())
    assert (
        entry.kinds["privacy_epsilon"] == "number" and entry.renamed["epsilon"] == "privacy_epsilon"
    )
    assert key_table.algorithm_keys("NoSuchAlgorithm") is None
    assert key_table.is_current(key_table.load_table())
