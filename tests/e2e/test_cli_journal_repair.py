"""A privacy journal repaired on opening (a torn last line dropped) is named by `rllib train`."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest

from rllib_privacy.accounting.journal import JOURNAL_DIR_NAME, REPAIRED_SUFFIX, PrivacyJournal
from rllib_privacy.cli.summary import Outcome, journal_repairs, print_summary


def test_a_torn_line_is_dropped_noted_and_named_in_the_summary(tmp_path):
    experiment = tmp_path / "exp"
    path = experiment / "LDPA3C_0" / JOURNAL_DIR_NAME / "ldp_a3c.jsonl"
    with PrivacyJournal(path, component="ldp_a3c") as journal:
        journal.append({"type": "release", "epsilon": 0.5})
    torn = b'{"seq": 1, "component": "ldp_a3c", "ty'
    with open(path, "ab") as f:
        f.write(torn)  # a crash mid-append
    assert journal_repairs(str(experiment), since=0.0) == []
    before = time.time()
    with PrivacyJournal(path, component="ldp_a3c") as journal:
        assert len(journal) == 1
    note = json.loads((path.parent / f"ldp_a3c.jsonl{REPAIRED_SUFFIX}").read_text())
    assert (note["dropped_bytes"], note["records"]) == (len(torn), 1)
    notices = journal_repairs(str(experiment), since=before)
    assert notices == [
        f"privacy journal {path} ended in a torn line (a crash mid-append): "
        f"{len(torn)} bytes dropped, 1 records kept"
    ]
    assert journal_repairs(str(experiment), since=time.time() + 60) == []  # an earlier run's


def _torn_journal(experiment) -> tuple[str, int]:
    """A journal with one record and a torn last line, repaired by opening it."""
    path = experiment / "LDPA3C_0" / JOURNAL_DIR_NAME / "ldp_a3c.jsonl"
    with PrivacyJournal(path, component="ldp_a3c") as journal:
        journal.append({"type": "release", "epsilon": 0.5})
    torn = b'{"seq": 1, "component": "ldp_a3c", "ty'
    with open(path, "ab") as f:
        f.write(torn)
    with PrivacyJournal(path, component="ldp_a3c"):
        pass  # what a resumed worker does: the torn line is dropped and noted
    return str(path), len(torn)


@pytest.mark.parametrize(
    "outcome",
    [
        {"grid": []},  # Tune returned: finished, errored or unfinished trials
        {"grid": None, "interrupted": True},  # Ctrl-C before Tune returned
        {"grid": None, "failure": "EOFError: Ran out of input"},  # Tune itself failed
    ],
    ids=["returned", "interrupted", "tune-failed"],
)
def test_the_driver_output_names_a_repaired_journal_without_verbose(tmp_path, capsys, outcome):
    """The summary (stdout, no -v) names the repair, whatever became of the experiment."""
    experiment = tmp_path / "exp"
    path, dropped = _torn_journal(experiment)
    exp = SimpleNamespace(name="exp", path=str(experiment))
    print_summary(Outcome(exp, **outcome))  # type: ignore[arg-type]  # reads name and path
    out = capsys.readouterr().out
    assert (
        f"  notice: privacy journal {path} ended in a torn line (a crash mid-append): "
        f"{dropped} bytes dropped, 1 records kept"
    ) in out.splitlines()
