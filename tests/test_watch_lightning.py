"""Lightning's loop handed to a watch through ``w.lightning_callback()``: a real ``Trainer.fit``
on CPU, whose optimizer runs forward and backward inside ``optimizer.step(closure)``."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

import torchxray as tx

pl = pytest.importorskip("pytorch_lightning")


class _Regressor(pl.LightningModule):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(
        self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int
    ) -> torch.Tensor:
        x, y = batch
        return nn.functional.mse_loss(self(x), y)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.05)


def _data() -> torch.utils.data.DataLoader:  # type: ignore[type-arg]
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 8, generator=g)
    y = x.sum(dim=1, keepdim=True)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8)


def test_lightning_callback_gives_the_watch_its_optimizer_and_loss(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = _Regressor()
    w = tx.watch(model, every=2)
    trainer = pl.Trainer(
        max_steps=6, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, default_root_dir=str(tmp_path),
        callbacks=[w.lightning_callback()],
    )  # fmt: skip
    trainer.fit(model, _data())
    assert w.optimizer is trainer.optimizers[0] and w.steps == 6
    # One loss per batch, at the step its optimizer.step() ended.
    assert [s for s, _ in w.loss] == [1, 2, 3, 4, 5, 6]
    assert all(v > 0 for _, v in w.loss)
    # Sampled steps (the first, then every 2nd): gradients read after the closure's backward;
    # the update ratio needs weights before the step, which a closure's step does not give.
    assert [s for s, _ in w["net.0"].grad_norm] == [1, 3, 5]
    assert all(v > 0 for _, v in w["net.2"].grad_norm)
    assert [s for s, _ in w["net.1"].act_zeros] == [1, 3, 5]
    assert w.nonfinite is None
    w.close()
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())
    assert not trainer.optimizers[0]._optimizer_step_pre_hooks
