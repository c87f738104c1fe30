"""The README's promises: the two quick-start commands, CI's command, every YAML key."""

from __future__ import annotations

import re
from pathlib import Path

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

from rllib_privacy.algorithms.ldp_a3c import LDPA3CConfig

REPO = Path(__file__).resolve().parents[1]
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


def test_every_ldpa3c_key_is_documented() -> None:
    own_keys = set(vars(LDPA3CConfig())) - set(vars(AlgorithmConfig()))
    own_keys = {k for k in own_keys if not k.startswith("_")}
    assert own_keys, "LDPA3CConfig adds no keys?"
    missing = sorted(k for k in own_keys if f"`{k}`" not in README)
    assert not missing, f"README does not document: {missing}"


def test_every_shipped_yaml_is_mentioned() -> None:
    for path in (REPO / "tuned_configs").glob("*.yaml"):
        assert f"tuned_configs/{path.name}" in README, path.name
