"""The Probe table's "before" column as a person reads it after a failed edit: undoing back to the
model that last passed changes nothing, and what a failed run did not reach is never "(new)"."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn as nn

from torchxray._view.session import Session


def _session() -> Session:
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 4 * 4, 4)
    )
    return Session(model, (torch.randn(1, 3, 6, 6),))


def _table(s: Session) -> dict[str, Any]:
    reply, _ = s.handle({"kind": "probe_table", "offset": 0, "limit": 100})
    return dict(reply)


def test_undo_after_a_failed_edit_compares_with_the_probe_that_passed() -> None:
    s = _session()
    s.run_probe()
    s.patch("edit", "0", out_channels=6)  # bn (num_features=8) now fails
    assert s.report is not None and not s.report.ok
    failed = _table(s)
    assert failed["not_reached"] == ["2", "3", "4"]
    assert all(r["status"] != "added" for r in failed["rows"])
    s.patch("undo")
    assert s.report is not None and s.report.ok
    assert s.probe_summary()["changed"] == 0
    assert {r["status"] for r in _table(s)["rows"]} == {"same"}


def test_a_second_failure_is_compared_with_the_last_run_that_passed() -> None:
    s = _session()
    s.run_probe()
    s.patch("edit", "0", out_channels=6)
    s.patch("edit", "1", num_features=6)  # now the Linear fails, further on
    rows = {r["path"]: r for r in _table(s)["rows"]}
    # Reached now and not by the failed run before: compared with the run that passed, not new.
    assert rows["2"]["status"] == "changed" and rows["2"]["before"] == "1×8×4×4"
    assert rows["4"]["status"] == "failed"
    assert "added" not in {r["status"] for r in rows.values()}
