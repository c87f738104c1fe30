"""A privacy journal repaired on opening (a torn last line dropped) is named by `rllib train`."""

from __future__ import annotations

import json
import time

from rllib_privacy.accounting.journal import JOURNAL_DIR_NAME, REPAIRED_SUFFIX, PrivacyJournal
from rllib_privacy.cli.summary import journal_repairs


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
