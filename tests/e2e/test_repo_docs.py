"""The README's promises: the two quick-start commands, CI's command, every YAML key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ray.tune.registry import get_trainable_cls

from rllib_privacy._registration import ALGORITHM_NAMES

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()


def _bash_blocks(text: str) -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def test_quick_start_has_the_two_commands() -> None:
    quick_start = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = _bash_blocks(quick_start)
    assert len(blocks) == 2
    assert blocks[0].endswith("rllib train -f tuned_configs/ldp_a3c.yaml")
    assert "pytest" in blocks[1]


def test_ci_runs_the_readme_test_command() -> None:
    test_command = _bash_blocks(README.split("## Quick start", 1)[1])[1]
    ci_script = (REPO / ".ci" / "run").read_text()
    assert test_command in ci_script.splitlines()


def _own_config_keys(config_cls: type) -> set[str]:
    """Keys a config class adds to the nearest RLlib config class it derives from."""
    rllib_base = next(c for c in config_cls.__mro__[1:] if c.__module__.startswith("ray.rllib"))
    own_keys = set(vars(config_cls())) - set(vars(rllib_base()))
    return {k for k in own_keys if not k.startswith("_")}


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_every_config_key_of_our_algorithms_is_documented(name: str) -> None:
    config_cls = type(get_trainable_cls(name).get_default_config())
    own_keys = _own_config_keys(config_cls)
    assert own_keys, f"{config_cls.__name__} adds no keys?"
    missing = sorted(k for k in own_keys if f"`{k}`" not in README)
    assert not missing, f"README does not document {config_cls.__name__} keys: {missing}"


def test_every_shipped_yaml_is_mentioned() -> None:
    for path in (REPO / "tuned_configs").glob("*.yaml"):
        assert f"tuned_configs/{path.name}" in README, path.name
