"""`rllib train --resume` continues from the newest complete checkpoint, not Tune's choice.

Tune restores the checkpoint its experiment state names, and that state is saved on a
timer: after a kill it can name checkpoint_000002 while 000003 and 000004 are on disk.
"""

from __future__ import annotations

from pathlib import Path

from ray import tune

from rllib_privacy.cli.launch import (
    CHECKPOINT_FILES,
    newest_checkpoint_trainable,
    newest_checkpoints,
    newest_complete_checkpoint,
)


def _checkpoint(trial: Path, index: int, *, complete: bool = True) -> Path:
    path = trial / f"checkpoint_{index:06d}"
    path.mkdir(parents=True)
    files = CHECKPOINT_FILES if complete else CHECKPOINT_FILES[1:]  # a kill mid-copy
    for name in files:
        (path / name).write_text("x")
    return path


def test_newest_complete_checkpoint_is_chosen(tmp_path):
    trial = tmp_path / "exp" / "PPO_0"
    two = _checkpoint(trial, 2)
    three = _checkpoint(trial, 3)
    _checkpoint(trial, 4, complete=False)
    assert newest_complete_checkpoint(str(two)) == str(three)
    assert newest_complete_checkpoint(str(three)) == str(three)
    assert newest_checkpoints(str(tmp_path / "exp")) == {str(trial): "checkpoint_000003"}
    # Not a Tune checkpoint folder, or nothing newer: unchanged.
    assert newest_complete_checkpoint(str(tmp_path)) == str(tmp_path)


def test_restored_trainable_loads_the_newest_checkpoint(tmp_path):
    trial = tmp_path / "exp" / "PPO_0"
    two = _checkpoint(trial, 2)
    _checkpoint(trial, 3)
    four = _checkpoint(trial, 4)
    restored = []

    class Base:
        def restore(self, checkpoint_path):
            restored.append(getattr(checkpoint_path, "path", checkpoint_path))

    latest = newest_checkpoint_trainable(Base)
    assert latest.__name__ == "Base" and issubclass(latest, Base)
    latest().restore(tune.Checkpoint.from_directory(str(two)))
    assert restored == [str(four)]
    latest().restore(str(four))  # already the newest: passed through
    assert restored[-1] == str(four)
