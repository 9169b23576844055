"""What a forward writes to itself, as the widget shows it (issue 39): the module's row names the
writes ("writes self.seen"), its Overview lists each as a sentence, the root's Overview lists what
no module holds (a file), and the Probe header says what could not be put back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import torch.nn as nn

from torchxray._view.session import Session
from torchxray._view.snapshot import snapshot


class Counting(nn.Module):
    """Its forward keeps what it saw and counts its calls: the writes torch.compile must handle."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.seen: list[torch.Tensor] = []
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.seen.append(x.mean())
        self.calls += 1
        return self.lin(x)


class Logging(nn.Module):
    """Writes a file: never put back."""

    def __init__(self, log: Path) -> None:
        super().__init__()
        self.log = str(log)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with open(self.log, "a") as f:
            f.write("called\n")
        return x


def _row(s: Session, path: str) -> dict[str, Any]:
    return dict(s.rows().row(s.tree[path]))


def _overview(s: Session, path: str) -> dict[str, Any]:
    s.selected = path
    return dict(s.overview())


def test_the_rows_and_overview_name_what_the_forward_writes() -> None:
    model = nn.Sequential(Counting(), nn.ReLU())
    s = Session(model, (torch.randn(2, 4),))
    s.run_probe()
    assert s.report is not None and s.report.ok
    assert _row(s, "0")["writes"] == ["writes self.seen", "writes self.calls"]
    for path in ("", "0.lin", "1"):
        assert "writes" not in _row(s, path), path
    lines = _overview(s, "0")["writes"]
    assert lines == [
        "writes 0.seen (container: 1 item added)",
        "writes 0.calls (counter: 0 -> 1)",
    ]
    assert "writes" not in _overview(s, "0.lin") and "writes" not in _overview(s, "")
    # Put back: the model is as it was, and a second probe says the same.
    assert model[0].seen == [] and model[0].calls == 0
    s.run_probe()
    assert _row(s, "0")["writes"] == ["writes self.seen", "writes self.calls"]
    assert "could not put back" not in s.probe_summary()["status"]
    # The read-only snapshot carries the same rows and Overview.
    data = snapshot(s)
    row = next(r for r in data["nodes"] if r["path"] == "0")
    assert row["writes"] == ["writes self.seen", "writes self.calls"]
    assert data["overview"]["0"]["writes"] == lines


def test_an_attribute_named_like_markup_stays_text() -> None:
    class Odd(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            setattr(self, "<script>", 1)  # noqa: B010 - the name is the point
            return x

    s = Session(nn.Sequential(Odd()), (torch.randn(1),))
    s.run_probe()
    assert _row(s, "0")["writes"] == ["writes self.<script>"]


def test_a_file_written_shows_on_the_root_and_in_the_probe_status(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    s = Session(nn.Sequential(nn.Linear(2, 2), Logging(log)), (torch.randn(1, 2),))
    s.run_probe()
    assert s.report is not None and s.report.ok, s.report
    assert not any(not w.restored and not w.outside for w in s.report.writes)
    assert "writes" not in _row(s, "1") and "writes" not in _row(s, "")
    root = _overview(s, "")["writes"]
    assert (
        len(root) == 1
        and root[0].startswith(f"writes {log} (file")
        and root[0].endswith("(not put back)")
    ), root
    assert "writes" not in _overview(s, "1")
    status = s.probe_summary()["status"]
    assert status.startswith("probe ok") and f"could not put back: writes {log}" in status, status
