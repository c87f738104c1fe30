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


#: Keys without which an algorithm's default config fails before its per-key checks.
REQUIRED = {"PATEPPO": {"pate_teacher_checkpoints": "/nonexistent/teachers"}}


def _full_validation_message(run: str, key: str, value: object) -> str | None:
    """The message of the validation `rllib train` runs after importing Ray (None: valid)."""
    from ray.tune.registry import get_trainable_cls

    from rllib_privacy.experiments.validate import validate_variants

    try:
        validate_variants({**REQUIRED.get(run, {}), key: value}, get_trainable_cls(run), 1, "")
    except Exception as e:  # noqa: BLE001 - the message is what is compared
        return str(e)
    return None


def test_each_refusal_rule_gives_the_full_validations_message_for_other_values():
    """The rules were probed with -2.5, -7.25, -1e300, -1, 0 and two strings; other values."""
    table = key_table.load_table()
    assert table is not None
    checked = 0
    for run in table["algorithms"]:
        entry = key_table.algorithm_keys(run)
        assert entry is not None
        for key, rule in entry.refused.items():
            if "choices" in rule:
                values: list[object] = ["laplase", "Sample"]
            else:
                values = [-0.5, -3, -1e-3] + ([0.0] if "at_most" in rule else [])
            for value in values:
                expected = _full_validation_message(run, key, value)
                assert key_table.refusal(rule, value) == expected, (run, key, value)
                checked += 1
    assert checked > 100  # LDPA3C, KickstartPPO, LDPPPO, exploration: most keys have a rule


def test_refusal_rules_cover_epsilon_and_mechanism_and_leave_valid_values():
    ldp = key_table.algorithm_keys("LDPA3C")
    assert ldp is not None
    epsilon, mechanism = ldp.refused["privacy_epsilon"], ldp.refused["privacy_mechanism"]
    assert key_table.refusal(epsilon, 1e-3) is None and key_table.refusal(epsilon, 0) is not None
    assert key_table.refusal(mechanism, "privunitg") is None
    # Not a value a rule is about: left to the kind check and the full validation.
    assert key_table.refusal(epsilon, "abc") is None and key_table.refusal(epsilon, True) is None
    # 0 is valid where only negatives are refused.
    alpha = ldp.refused["agents_exploration_alpha"]
    assert key_table.refusal(alpha, 0) is None and key_table.refusal(alpha, -0.1) is not None
    # A YAML int shown as the float the class made of it, as its own message does.
    ppo = key_table.algorithm_keys("LDPPPO")
    assert ppo is not None
    assert key_table.refusal(ppo.refused["privacy_epsilon"], -1) == (
        "config key 'privacy_epsilon': epsilon must be a finite number > 0, got -1.0"
    )


def test_keys_behind_a_required_path_are_probed_with_a_stand_in():
    """PATE's default config lacks its teachers: the rules come from a stand-in path."""
    pate = key_table.algorithm_keys("PATEPPO")
    assert pate is not None
    assert key_table.refusal(pate.refused["pate_epsilon_budget"], -1) == (
        _full_validation_message("PATEPPO", "pate_epsilon_budget", -1)
    )
    assert key_table.refusal(pate.refused["pate_aggregator"], "gnmax") is None


def test_a_refusal_that_depends_on_another_key_gets_no_rule():
    """LDPPPO's privacy_reduced_dim is refused for 'only with prs' under the default
    mechanism but by its own bound under prs: one message would be wrong, so no rule."""
    assert _full_validation_message("LDPPPO", "privacy_reduced_dim", -2) is not None
    ppo = key_table.algorithm_keys("LDPPPO")
    assert ppo is not None and "privacy_reduced_dim" not in ppo.refused


def test_a_refusal_only_under_the_default_choice_gets_no_rule():
    """PATE checks pate_gamma only for LNMax (the default); GNMax, probed with a stand-in
    for the σ it requires, takes any γ: a rule would refuse a valid config."""
    from ray.tune.registry import get_trainable_cls

    from rllib_privacy.experiments.validate import validate_variants

    gnmax = {**REQUIRED["PATEPPO"], "pate_aggregator": "gnmax", "pate_gnmax_sigma": 40.0}
    validate_variants({**gnmax, "pate_gamma": -1}, get_trainable_cls("PATEPPO"), 1, "")
    assert _full_validation_message("PATEPPO", "pate_gamma", -1) is not None  # LNMax
    pate = key_table.algorithm_keys("PATEPPO")
    assert pate is not None and "pate_gamma" not in pate.refused
