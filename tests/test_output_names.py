"""Outputs named as a person reads them on the rows (torchinfo, Netron and torchview users expect
it): a dict or tuple output shows its first tensor by name and how many more, the tooltip, the
Probe table and the Overview every one of them by name; a lone tensor stays its shape alone."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn as nn

from torchxray._view.session import Session


class Heads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.pair = Pair()

    def forward(self, x: torch.Tensor) -> dict[str, Any]:
        h = self.body(x)
        a, b = self.pair(h)
        return {"logits": a, "cache": [(b, b.t())], "mask": None}


class Pair(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x[:, :3], x


def _rows(s: Session) -> dict[str, dict[str, Any]]:
    root = s.tree_state()["root"]
    kids = s.tree_state()["pages"][""]["items"]
    return {r["path"]: dict(r) for r in [root, *kids]}  # type: ignore[typeddict-item]


def test_rows_name_their_outputs() -> None:
    s = Session(Heads(), (torch.randn(2, 4),))
    s.run_probe()
    rows = _rows(s)
    assert rows["body"]["out"] == "2×8" and "out_all" not in rows["body"]
    assert rows["pair"]["out"] == "[0]: 2×3 +1"
    root = rows[""]
    assert root["out"] == "logits: 2×3 +2"
    assert root["out_all"].splitlines() == ["logits: 2×3", "cache[0][0]: 2×8", "cache[0][1]: 8×2"]
    reply, _ = s.handle({"kind": "probe_table", "offset": 0, "limit": 10})
    table = {r["path"]: r for r in reply["rows"]}  # type: ignore[typeddict-item]
    assert table[""]["outputs"] == "logits: 2×3, cache[0][0]: 2×8, cache[0][1]: 8×2"
    assert table["body"]["outputs"] == "2×8"
    assert s.overview()["probe"]["outputs"].startswith("logits: 2×3 float32")  # type: ignore[index]
