"""``report.returns``: what each module with children returned came from, the half of the
dataflow that ``report.edges`` (A's output received by B) cannot see: a block whose residual sum
(``x = self.drop_path(x) + shortcut``) is returned, not received by any of its own modules. The
Graph tab draws these as edges into "output"; memoised blocks give what a full run gives."""

from __future__ import annotations

import torch
import torch.nn as nn

from torchxray.probe import run_probe


class Residual(nn.Module):
    """timm's EfficientNet block in small: the skip is added after the last layer and returned."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.drop_path = nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shortcut = x
        x = self.bn(self.conv(x))
        return self.drop_path(x) + shortcut


def _model() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 4, 1), *(Residual() for _ in range(4)), nn.Flatten())


def test_a_returned_residual_sum_gives_the_skip_and_the_last_layer() -> None:
    rep = run_probe(_model(), (torch.randn(1, 3, 5, 5),), {}, memoise=False)
    got = {(e.src, e.dst, e.ops) for e in rep.returns}
    assert ("1.drop_path", "1", ("add",)) in got  # the last layer's output, through the add
    assert ("0", "1", ("add",)) in got  # the block's own input: the skip
    assert ("", "") not in {(e.src, e.dst) for e in rep.returns}
    # Leaf modules record none; edges and returns stay apart.
    assert {e.dst for e in rep.returns} == {"", "1", "2", "3", "4"}
    assert not any(e.dst == "1" and e.src == "1.drop_path" for e in rep.edges)


def test_memoised_blocks_give_the_returns_of_a_full_run() -> None:
    args = (torch.randn(1, 3, 5, 5),)
    fast = run_probe(_model(), args, {})
    full = run_probe(_model(), args, {}, memoise=False)
    assert fast.memoised
    assert list(fast.returns) == list(full.returns)
    assert list(fast.edges) == list(full.edges)


def test_a_real_probe_keeps_no_returns() -> None:
    assert run_probe(_model(), (torch.randn(1, 3, 5, 5),), {}, mode="real").returns == ()
