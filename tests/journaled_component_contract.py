"""The contract every journaled component keeps (kickstart teacher, PATE labeler, LDPA3C).

Each component writes its releases to a write-ahead privacy journal before they leave and
replays it through the one generic replay (``ReplayJournal``). What that must guarantee is
written once here, as Stable-Baselines3 writes its save/load checks once for every algorithm:
a component's test module subclasses ``JournaledComponentContract`` and says how to build the
component, make releases, take and restore a checkpoint, and read its figures.

Every scenario is a restart or a restore that must neither forget a release nor count one
twice: the restarted component's privacy figures equal those of the run that never stopped.
"""

from __future__ import annotations

import abc
import itertools
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from rllib_privacy.accounting.journal import (
    ACCEPT_JOURNAL_LOSS_ENV,
    JournalNotFoundError,
    PrivacyJournal,
    journal_ledger_id,
)


class JournaledComponentContract(abc.ABC):
    """Restart and restore scenarios; subclasses implement the hooks below."""

    #: The component's journal name (``<folder>/<component>.jsonl``).
    component: ClassVar[str]
    #: Whether the component has a run-level budget that it stops answering at.
    has_budget: ClassVar[bool] = True

    @pytest.fixture(autouse=True)
    def _close_components(self, tmp_path: Path) -> Iterator[None]:
        self._made: list[Any] = []
        self._checkpoints = (tmp_path / f"checkpoint_{n}" for n in itertools.count())
        yield
        for component in self._made:
            self.close(component)

    # ------------------------------------------------------------------ hooks

    @abc.abstractmethod
    def build(self, folder: Path, *, budget_spends: int | None) -> Any:
        """A component journaling to ``journal(folder)`` (replaying what it holds).

        Args:
            folder: The journal folder.
            budget_spends: A budget that affords exactly this many ``spend`` calls (None:
                no limit).

        """

    @abc.abstractmethod
    def spend(self, component: Any, seed: int) -> int:
        """Make releases (fewer once the budget is spent); return how many."""

    @abc.abstractmethod
    def checkpoint(self, component: Any, where: Path) -> Any:
        """What an Algorithm checkpoint holds of the component (JSON-round-tripped)."""

    @abc.abstractmethod
    def restore(self, component: Any, checkpoint: Any) -> None:
        """Restore ``checkpoint`` into ``component`` (the spent budget must never reset)."""

    @abc.abstractmethod
    def releases(self, component: Any) -> int:
        """Releases the component's ledger holds."""

    @abc.abstractmethod
    def replayed(self, component: Any) -> int:
        """Releases it counts as replayed from a journal (made after its checkpoint)."""

    @abc.abstractmethod
    def privacy(self, component: Any) -> dict[str, Any]:
        """The figures a restored component must share with the run that never stopped."""

    @abc.abstractmethod
    def exhausted(self, component: Any) -> bool:
        """Whether it has stopped answering for good (its budget is spent)."""

    def close(self, component: Any) -> None:  # noqa: B027  # most components need nothing
        """Release what the component holds (an Algorithm's actors)."""

    # ------------------------------------------------------------------ helpers

    def make(self, folder: Path, *, budget_spends: int | None = None) -> Any:
        component = self.build(folder, budget_spends=budget_spends)
        self._made.append(component)
        return component

    def take_checkpoint(self, component: Any) -> Any:
        return self.checkpoint(component, next(self._checkpoints))

    def journal(self, folder: Path) -> Path:
        return folder / f"{self.component}.jsonl"

    def records(self, folder: Path) -> list[dict[str, Any]]:
        return PrivacyJournal(self.journal(folder), component=self.component).records()

    def ledger_id(self, folder: Path) -> str:
        ledger_id = journal_ledger_id(self.journal(folder), component=self.component)
        assert ledger_id is not None
        return ledger_id

    # ------------------------------------------------------------------ the contract

    def test_restart_without_checkpoint_replays_everything(self, tmp_path: Path) -> None:
        component = self.make(tmp_path)
        made = sum(self.spend(component, seed) for seed in range(3))
        assert made > 0 and self.releases(component) == made
        restarted = self.make(tmp_path)  # a trial that crashed before its first checkpoint
        assert self.privacy(restarted) == self.privacy(component)
        assert self.replayed(restarted) == made

    def test_restore_replays_the_releases_after_the_checkpoint(self, tmp_path: Path) -> None:
        component = self.make(tmp_path)
        self.spend(component, 0)
        checkpoint = self.take_checkpoint(component)
        after = self.spend(component, 1) + self.spend(component, 2)  # then the process dies
        restarted = self.make(tmp_path)  # what Algorithm.setup does on a resumed trial
        self.restore(restarted, checkpoint)  # then Tune restores the checkpoint
        assert self.privacy(restarted) == self.privacy(component)
        assert self.replayed(restarted) == after
        # A later checkpoint carries the count; restoring it replays nothing more.
        again = self.make(tmp_path)
        self.restore(again, self.take_checkpoint(restarted))
        assert self.replayed(again) == after
        assert self.privacy(again) == self.privacy(component)

    def test_checkpoint_restored_into_a_new_journal_is_snapshotted(self, tmp_path: Path) -> None:
        old = self.make(tmp_path / "old")
        self.spend(old, 0)
        self.spend(old, 1)
        moved = self.make(tmp_path / "new")  # e.g. Algorithm.from_checkpoint elsewhere
        self.restore(moved, self.take_checkpoint(old))
        assert self.replayed(moved) == 0
        assert [r["kind"] for r in self.records(tmp_path / "new")] == ["header", "snapshot"]
        self.spend(moved, 2)
        self.spend(old, 2)
        # The new journal alone reproduces the totals, snapshot included.
        again = self.make(tmp_path / "new")
        assert self.privacy(again) == self.privacy(old) == self.privacy(moved)

    def test_restore_into_a_new_folder_counts_the_releases_after_the_checkpoint(
        self, tmp_path: Path
    ) -> None:
        # The reported case: releases made after the checkpoint, restored into another folder,
        # were not counted. The checkpoint's journal is found by its ledger id.
        old = self.make(tmp_path / "run_1")
        before = self.spend(old, 0)
        checkpoint = self.take_checkpoint(old)
        after = self.spend(old, 1)
        moved = self.make(tmp_path / "run_2")
        self.restore(moved, checkpoint)
        assert self.releases(moved) == self.releases(old) == before + after
        assert self.replayed(moved) == after
        assert self.privacy(moved) == self.privacy(old)
        # The new folder's journal alone reproduces the total (its snapshot names the source).
        source = self.records(tmp_path / "run_2")[-1]["restored_from"]
        assert source["ledger_id"] == self.ledger_id(tmp_path / "run_1")
        assert self.releases(self.make(tmp_path / "run_2")) == before + after

    def test_restoring_the_same_checkpoint_again_keeps_the_new_folders_releases(
        self, tmp_path: Path
    ) -> None:
        # A trial restored from another run's checkpoint restarts (before its own first
        # checkpoint) and restores that checkpoint again: its releases since then still count.
        old = self.make(tmp_path / "run_1")
        made = self.spend(old, 0)
        checkpoint = self.take_checkpoint(old)
        made += self.spend(old, 1)
        moved = self.make(tmp_path / "run_2")
        self.restore(moved, checkpoint)
        made += self.spend(moved, 2)
        assert self.releases(moved) == made
        restarted = self.make(tmp_path / "run_2")
        self.restore(restarted, checkpoint)
        assert self.releases(restarted) == made
        made += self.spend(old, 3)  # the first run went on meanwhile
        again = self.make(tmp_path / "run_2")
        self.restore(again, checkpoint)
        assert self.releases(again) == made
        assert self.releases(self.make(tmp_path / "run_2")) == made

    def test_restore_finds_a_journal_copied_beside_the_new_one(self, tmp_path: Path) -> None:
        # A run folder moved to another machine: the marker's path is stale, the copy is found.
        old = self.make(tmp_path / "run_1")
        made = self.spend(old, 0)
        checkpoint = self.take_checkpoint(old)
        made += self.spend(old, 1)
        moved = self.make(tmp_path / "run_2")
        ledger_id = self.ledger_id(tmp_path / "run_1")
        self.journal(tmp_path / "run_1").rename(
            tmp_path / "run_2" / f"{self.component}.{ledger_id}.jsonl"
        )
        self.restore(moved, checkpoint)
        assert self.releases(moved) == made

    def test_restore_without_the_checkpoints_journal_names_it(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        old = self.make(tmp_path / "run_1")
        made = self.spend(old, 0)
        checkpoint = self.take_checkpoint(old)
        ledger_id = self.ledger_id(tmp_path / "run_1")
        old_journal = self.journal(tmp_path / "run_1")
        old_journal.unlink()
        monkeypatch.delenv(ACCEPT_JOURNAL_LOSS_ENV, raising=False)
        moved = self.make(tmp_path / "run_2")
        with pytest.raises(JournalNotFoundError, match=ledger_id) as error:
            self.restore(moved, checkpoint)
        message = str(error.value)
        assert str(old_journal) in message and ACCEPT_JOURNAL_LOSS_ENV in message
        assert f"{self.component}: the checkpoint" in message
        # The explicit opt-out restores the checkpoint's own total, loudly.
        monkeypatch.setenv(ACCEPT_JOURNAL_LOSS_ENV, ledger_id)
        with caplog.at_level(logging.WARNING):
            self.restore(moved, checkpoint)
        assert self.releases(moved) == made
        assert "WITHOUT its privacy journal" in caplog.text

    def test_budget_holds_across_any_number_of_restarts(self, tmp_path: Path) -> None:
        if not self.has_budget:
            pytest.skip(f"{self.component} has no run-level budget")
        made, answered = [], 0
        for restart in range(4):
            # Killed and restarted from scratch each time: the journal carries the spend.
            component = self.make(tmp_path, budget_spends=2)
            made.append(self.spend(component, restart))
            answered += bool(made[-1])
        assert answered == 2 and made[2:] == [0, 0]
        final = self.make(tmp_path, budget_spends=2)
        assert self.exhausted(final) and self.releases(final) == sum(made)
        assert self.spend(final, 9) == 0
