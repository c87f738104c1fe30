"""Helpers shared by the tests that run the ``rllib`` command in a subprocess.

It lives at the top of ``tests/`` (on ``sys.path`` through ``conftest.py``'s folder) so that
tests in any layer folder import it without depending on collection order.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: A one-iteration PPO experiment on CartPole: the smallest real run of `rllib train`.
PPO_FILE = """\
ppo:
  run: PPO
  env: CartPole-v1
  stop: {training_iteration: 1}
  config: {num_env_runners: 0, train_batch_size_per_learner: 64, minibatch_size: 32}
"""


def run_rllib(*args: str, timeout: float = 400) -> subprocess.CompletedProcess:
    """Runs ``python -m rllib_privacy.cli ARGS`` from the repository root, capturing output."""
    return subprocess.run(
        [sys.executable, "-m", "rllib_privacy.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def train_one_iteration(
    path: str | Path, storage: Path, config: dict, *, num_samples: int | None = None
) -> subprocess.CompletedProcess:
    """``rllib train -f PATH`` for one iteration with ``--config CONFIG``, 2 CPUs, into STORAGE."""
    args = ["train", "-f", str(path), "--stop", json.dumps({"training_iteration": 1})]
    args += ["--config", json.dumps(config)]
    if num_samples is not None:
        args += ["--num-samples", str(num_samples)]
    return run_rllib(*args, "--storage-path", str(storage), "--ray-num-cpus", "2")


def scalar_tags(storage: Path) -> set[str]:
    """The scalar tags of the first TensorBoard run (trial folder) under ``storage``.

    A trial folder holds Tune's event file and the privacy layout's (its ε budget line):
    TensorBoard reads them as one run, and so does this.
    """
    from tensorboard.backend.event_processing import event_accumulator

    events = list(storage.rglob("events.out.tfevents*"))
    assert events, f"no TensorBoard event file under {storage}"
    accumulator = event_accumulator.EventAccumulator(str(events[0].parent))
    accumulator.Reload()
    return set(accumulator.Tags()["scalars"])
