"""PrivacyJournal: durable appends, torn-tail repair, corruption and component checks.

ReplayJournal: the header's ledger id, checkpoint markers, finding a checkpoint's journal,
and the generic replay of typed events into a ledger and a component.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import pytest

from rllib_privacy.accounting import (
    EpsilonDeltaRelease,
    LDPLedger,
    LDPReport,
    PrivacyJournal,
    PrivacyJournalError,
    ReplayJournal,
    default_journal_dir,
    journal_file,
)
from rllib_privacy.accounting.events import PrivacyEvent
from rllib_privacy.accounting.journal import JournalNotFoundError, record_kind


def report(agent_id: str, epsilon: float, mechanism: str = "laplace") -> LDPReport:
    return LDPReport(agent_id=agent_id, epsilon=epsilon, mechanism=mechanism)


class Recorder:
    """A journaled component that only remembers what the journal gave it."""

    def __init__(self, ledger: LDPLedger, snapshot: dict[str, Any] | None = None) -> None:
        self.ledger = ledger
        self.snapshot = snapshot or {}
        self.releases: list[tuple[PrivacyEvent, dict[str, Any]]] = []
        self.updates: list[dict[str, Any]] = []
        self.snapshots: list[dict[str, Any]] = []

    def journal_snapshot(self) -> dict[str, Any]:
        return self.snapshot

    def load_journal_snapshot(self, state: Mapping[str, Any]) -> None:
        self.snapshots.append(dict(state))

    def apply_journal_update(self, fields: Mapping[str, Any]) -> None:
        self.updates.append(dict(fields))

    def count_replayed_release(self, event: PrivacyEvent, extras: Mapping[str, Any]) -> None:
        self.releases.append((event, dict(extras)))


@pytest.fixture
def path(tmp_path: pathlib.Path) -> pathlib.Path:
    return tmp_path / "deep" / "dir" / "ldp_a3c.jsonl"


def test_append_returns_consecutive_seqs_and_creates_parents(path: pathlib.Path) -> None:
    journal = PrivacyJournal(path, component="ldp_a3c")
    assert journal.last_seq == -1 and journal.records() == []
    assert [journal.append({"type": "release", "i": i}) for i in range(3)] == [0, 1, 2]
    assert journal.last_seq == 2 and len(journal) == 3
    lines = path.read_text().splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [0, 1, 2]
    assert all(json.loads(line)["component"] == "ldp_a3c" for line in lines)


def test_reopen_reads_records_and_continues_seq(path: pathlib.Path) -> None:
    with PrivacyJournal(path, component="ldp_a3c") as journal:
        journal.append({"type": "release", "epsilon": 0.5, "agent": "a"})
        journal.append({"type": "release", "epsilon": 0.25, "agent": ("b", 1)})
    again = PrivacyJournal(path, component="ldp_a3c")
    records = again.records()
    assert [r["epsilon"] for r in records] == [0.5, 0.25]
    # In-memory records equal what a reader of the file gets (tuples become lists).
    assert records[1]["agent"] == ["b", 1]
    assert again.records(after_seq=0) == records[1:]
    assert again.records(after_seq=1) == []
    assert again.append({"type": "release"}) == 2


def test_records_are_copies(path: pathlib.Path) -> None:
    journal = PrivacyJournal(path, component="x")
    journal.append({"value": 1})
    journal.records()[0]["value"] = 99
    assert journal.records()[0]["value"] == 1


def test_extend_writes_all_or_nothing(path: pathlib.Path) -> None:
    journal = PrivacyJournal(path, component="x")
    assert journal.extend([]) == -1
    assert journal.extend([{"i": 0}, {"i": 1}]) == 1
    with pytest.raises(ValueError, match="JSON-able"):
        journal.extend([{"i": 2}, {"i": float("inf")}])
    assert journal.last_seq == 1
    assert len(path.read_text().splitlines()) == 2


@pytest.mark.parametrize(
    ("record", "match"),
    [
        ({"seq": 3}, "journal's own keys"),
        ({"component": "y"}, "journal's own keys"),
        ({1: "a"}, "string keys"),
        ([("a", 1)], "mapping"),
        ({"eps": float("nan")}, "finite"),
        ({"obj": object()}, "JSON-able"),
    ],
)
def test_bad_records_are_rejected(path: pathlib.Path, record: object, match: str) -> None:
    journal = PrivacyJournal(path, component="x")
    with pytest.raises(ValueError, match=match):
        journal.append(record)  # type: ignore[arg-type]
    assert journal.last_seq == -1 and path.read_bytes() == b""


@pytest.mark.parametrize("component", ["", "a/b", "..", None, 3])
def test_bad_component_is_rejected(path: pathlib.Path, component: object) -> None:
    with pytest.raises(ValueError, match="component"):
        PrivacyJournal(path, component=component)  # type: ignore[arg-type]


def test_torn_last_line_is_ignored_and_truncated(path: pathlib.Path) -> None:
    journal = PrivacyJournal(path, component="x")
    journal.extend([{"i": 0}, {"i": 1}])
    journal.close()
    clean = path.read_bytes()
    with open(path, "ab") as handle:  # a crash in the middle of the third append
        handle.write(b'{"seq":2,"component":"x","ti')
    reopened = PrivacyJournal(path, component="x")
    assert reopened.last_seq == 1
    assert path.read_bytes() == clean
    assert reopened.append({"i": 2}) == 2
    assert [r["i"] for r in PrivacyJournal(path, component="x").records()] == [0, 1, 2]


def test_complete_but_unterminated_last_line_is_torn(path: pathlib.Path) -> None:
    # Without its newline the append had not returned, so the release never left.
    journal = PrivacyJournal(path, component="x")
    journal.append({"i": 0})
    journal.close()
    with open(path, "ab") as handle:
        handle.write(b'{"seq":1,"component":"x","time":0,"i":1}')
    assert PrivacyJournal(path, component="x").last_seq == 0


def test_garbage_last_line_is_torn(path: pathlib.Path) -> None:
    journal = PrivacyJournal(path, component="x")
    journal.append({"i": 0})
    journal.close()
    with open(path, "ab") as handle:
        handle.write(b"\0\0\0\0\n")
    assert PrivacyJournal(path, component="x").last_seq == 0
    assert len(path.read_bytes().splitlines()) == 1


def test_corruption_before_the_last_line_raises_with_file_and_line(path: pathlib.Path) -> None:
    journal = PrivacyJournal(path, component="x")
    journal.extend([{"i": 0}, {"i": 1}, {"i": 2}])
    journal.close()
    lines = path.read_bytes().split(b"\n")
    lines[1] = b"{not json"
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(PrivacyJournalError, match=r"ldp_a3c\.jsonl' line 2 is not valid JSON"):
        PrivacyJournal(path, component="x")


def test_missing_or_reordered_seq_raises(path: pathlib.Path) -> None:
    journal = PrivacyJournal(path, component="x")
    journal.extend([{"i": 0}, {"i": 1}, {"i": 2}])
    journal.close()
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], lines[2]]) + "\n")
    with pytest.raises(PrivacyJournalError, match="line 2 has seq 2, expected 1"):
        PrivacyJournal(path, component="x")


def test_non_record_line_raises(path: pathlib.Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_text('[1, 2]\n{"seq": 0}\n')
    with pytest.raises(PrivacyJournalError, match="line 1 is not a journal record"):
        PrivacyJournal(path, component="x")


def test_component_mismatch_raises(path: pathlib.Path) -> None:
    PrivacyJournal(path, component="teacher").append({"i": 0})
    with pytest.raises(PrivacyJournalError, match="component 'teacher', not 'pate'"):
        PrivacyJournal(path, component="pate")


def test_closed_journal_refuses_appends(path: pathlib.Path) -> None:
    journal = PrivacyJournal(path, component="x")
    journal.close()
    with pytest.raises(PrivacyJournalError, match="closed"):
        journal.append({"i": 0})


def test_appends_survive_a_killed_writer(tmp_path: pathlib.Path) -> None:
    """A process killed right after append() returned leaves every record on disk."""
    path = tmp_path / "j.jsonl"
    # The module is loaded from its file: journal.py is pure, so no Ray import is paid for.
    module = pathlib.Path(__file__).resolve().parents[2] / "rllib_privacy/accounting/journal.py"
    script = (
        "import importlib.util, os\n"
        f"spec = importlib.util.spec_from_file_location('journal', {str(module)!r})\n"
        "journal_module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(journal_module)\n"
        f"journal = journal_module.PrivacyJournal({str(path)!r}, component='x')\n"
        "for i in range(5):\n"
        "    journal.append({'i': i})\n"
        "os._exit(0)  # no close, no flush at exit\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    assert [r["i"] for r in PrivacyJournal(path, component="x").records()] == list(range(5))


def test_default_dir_and_file_names(tmp_path: pathlib.Path) -> None:
    assert default_journal_dir(tmp_path) == tmp_path / "privacy_journal"
    assert journal_file(tmp_path, "ldp_a3c") == tmp_path / "ldp_a3c.jsonl"
    with pytest.raises(ValueError, match="component"):
        journal_file(tmp_path, "../x")


def test_records_detects_a_file_changed_behind_its_back(path: pathlib.Path) -> None:
    journal = PrivacyJournal(path, component="x")
    journal.append({"i": 0})
    PrivacyJournal(path, component="x").append({"i": 1})  # a second writer
    with pytest.raises(PrivacyJournalError, match="holds 2 records, but 1 were written"):
        journal.records()


# ---------------------------------------------------------------------- ReplayJournal


def test_replay_journal_header_carries_the_ledger_id(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "c.jsonl"
    ledger = LDPLedger()
    journal = ReplayJournal(path, component="c", ledger=ledger)
    assert PrivacyJournal(path, component="c").records()[0]["ledger_id"] == ledger.ledger_id
    # Reopening (a restarted run) gives the new ledger the journal's identity.
    other = LDPLedger()
    assert ReplayJournal(path, component="c", ledger=other).ledger_id == ledger.ledger_id
    assert other.ledger_id == ledger.ledger_id == journal.marker()["ledger_id"]
    assert journal.marker()["journal_path"] == str(path)


def test_ldp_a3c_journal_written_before_the_one_journal_still_opens(
    tmp_path: pathlib.Path,
) -> None:
    path = tmp_path / "ldp_a3c.jsonl"
    old = PrivacyJournal(path, component="ldp_a3c")
    old.append({"type": "start", "journal_id": "abc"})
    old.append({"type": "submission", "agent_id": "a", "epsilon": 0.5, "mechanism": "prs"})
    old.close()
    ledger = LDPLedger()
    journal = ReplayJournal(path, component="ldp_a3c", ledger=ledger)
    assert journal.ledger_id == "abc" == ledger.ledger_id
    assert [record_kind(r) for r in journal.records(after_seq=0)] == ["submission"]
    # A checkpoint marker of that version ({"id", "seq"}) still names its records.
    assert journal.tail_after({"id": "abc", "seq": 0}) == journal.records(after_seq=0)
    component = Recorder(ledger)
    assert journal.replay_all(component) == 1
    assert ledger.epsilon_spent("a") == 0.5 and component.releases == [
        (report("a", 0.5, "prs"), {"agent_id": "a", "epsilon": 0.5, "mechanism": "prs"})
    ]


def test_marker_past_the_end_of_its_journal_raises(tmp_path: pathlib.Path) -> None:
    journal = ReplayJournal(tmp_path / "c.jsonl", component="c")
    marker = {**journal.marker(), "journal_seq": 5}
    with pytest.raises(PrivacyJournalError, match="lost records"):
        journal.tail_after(marker)


def test_a_checkpoints_journal_is_found_only_by_its_header(tmp_path: pathlib.Path) -> None:
    source = ReplayJournal(tmp_path / "old" / "c.jsonl", component="c", ledger=LDPLedger())
    source.append_release(report("a", 0.25), n=1)
    marker = {**source.marker(), "journal_path": str(tmp_path / "gone.jsonl")}
    source.append_release(report("a", 0.5), n=2)
    ledger = LDPLedger()
    here = ReplayJournal(tmp_path / "new" / "c.jsonl", component="c", ledger=ledger)
    # Files beside this journal that are another component's or another ledger's do not count.
    ReplayJournal(tmp_path / "new" / "other_ledger.jsonl", component="c")
    ReplayJournal(tmp_path / "new" / "other_component.jsonl", component="d")
    (tmp_path / "new" / "garbage.jsonl").write_text("not json\n")
    assert here.find_journal(marker) is None
    component = Recorder(ledger, snapshot={"n": 2})
    with pytest.raises(JournalNotFoundError, match=source.ledger_id) as error:
        here.after_restore(marker, component, accept_loss=False)
    assert "gone.jsonl" in str(error.value) and component.releases == []
    copy = tmp_path / "new" / f"c.{source.ledger_id}.jsonl"
    copy.write_bytes(source.path.read_bytes())
    assert here.find_journal(marker) == copy
    here.after_restore(marker, component)
    assert [extras["n"] for _, extras in component.releases] == [2]
    assert ledger.epsilon_spent("a") == 0.5  # only the release after the checkpoint
    snapshot = here.records()[-1]
    assert snapshot["kind"] == "snapshot" and snapshot["state"] == {"n": 2}
    assert snapshot["restored_from"]["replayed_records"] == 1


def test_releases_updates_and_snapshots_replay_generically(tmp_path: pathlib.Path) -> None:
    ledger = LDPLedger(epsilon_budget_per_agent=0.5)
    journal = ReplayJournal(tmp_path / "c.jsonl", component="c", ledger=ledger)
    journal.append_release(report("a", 0.25), score=3)
    journal.extend_releases([(report("a", 0.25), {}), (report("b", 0.5), {"score": 4})])
    journal.append_update(stopped=True)
    # Replayed even beyond the budget: the release may have left before a crash.
    journal.append_release(report("a", 0.25))
    restarted = LDPLedger(epsilon_budget_per_agent=0.5)
    component = Recorder(restarted)
    reopened = ReplayJournal(journal.path, component="c", ledger=restarted)
    assert reopened.replay_all(component) == 4
    assert restarted.epsilon_spent("a") == 0.75 and restarted.releases == 4
    assert [extras for _, extras in component.releases] == [{"score": 3}, {}, {"score": 4}, {}]
    assert component.updates == [{"stopped": True}]
    journal.append_snapshot({"ledger": ledger.state_dict()})
    component = Recorder(restarted)
    reopened.replay(journal.records(after_seq=journal.last_seq - 1), component)
    assert component.snapshots == [{"ledger": ledger.state_dict()}]


def test_a_release_the_ledger_cannot_compose_is_refused(tmp_path: pathlib.Path) -> None:
    journal = ReplayJournal(tmp_path / "c.jsonl", component="c", ledger=LDPLedger())
    journal.append_release(EpsilonDeltaRelease(epsilon=1.0, delta=0.0))
    journal.append_release(report("a", 0.25))
    restarted = LDPLedger()
    reopened = ReplayJournal(journal.path, component="c", ledger=restarted)
    with pytest.raises(PrivacyJournalError, match="record 1 cannot be replayed.*LDPReport"):
        reopened.replay_all(Recorder(restarted))
    assert restarted.releases == 0
    odd = ReplayJournal(tmp_path / "d.jsonl", component="d", ledger=LDPLedger())
    with pytest.raises(PrivacyJournalError, match="unknown kind 'mystery'"):
        odd.replay([{"kind": "mystery", "seq": 1}], Recorder(LDPLedger()))
