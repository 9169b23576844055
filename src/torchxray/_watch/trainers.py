"""The loops other libraries write, handed to a watch: a ``transformers.TrainerCallback`` and a
Lightning ``Callback``. Both import their library when asked for (neither is a dependency).

Hugging Face: the Trainer builds its optimizer inside ``train()``; the callback gives it to the
watch at ``on_train_begin`` (accelerate's wrapper unwrapped) and records the loss the Trainer
logs (``logging_steps``) at the step it was logged. Steps are the optimizer's steps, as the
Trainer's ``global_step`` counts them (gradient accumulation included).

Lightning (tests/test_watch_lightning.py, a real ``Trainer.fit`` with pytorch-lightning 2.6):
the optimizers exist by ``on_fit_start``; its optimizer runs forward and backward inside
``optimizer.step(closure)``, so the watch reads gradients after the step (no update ratio, and a
replayed NaN step sees the updated weights) and the callback records each batch's loss at the
step that batch's ``optimizer.step()`` ended.
"""

from __future__ import annotations

from typing import Any

__all__ = ["hf_callback", "lightning_callback"]


def hf_callback(w: Any) -> Any:
    """``w``: a ``torchxray.Watch`` (not imported: watch.py imports this module)."""
    from transformers import TrainerCallback

    class TorchxrayCallback(TrainerCallback):  # type: ignore[misc]
        """Hands the Trainer's optimizer and logged loss to a torchxray watch."""

        def __init__(self) -> None:
            self.watch = w

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            opt = kwargs.get("optimizer")
            if opt is not None and not w.closed:
                w.attach_optimizer(opt)

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            loss = (logs or {}).get("loss")
            if isinstance(loss, (int, float)) and not w.closed:
                w.record_loss(int(state.global_step), float(loss))

    return TorchxrayCallback()


def lightning_callback(w: Any) -> Any:
    try:
        from lightning.pytorch import Callback
    except ImportError:
        try:
            from pytorch_lightning import Callback
        except ImportError:
            raise ImportError(
                "w.lightning_callback() needs Lightning: pip install lightning"
            ) from None

    class TorchxrayCallback(Callback):  # type: ignore[misc]
        def __init__(self) -> None:
            self.watch = w

        def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
            if trainer.optimizers and not w.closed:
                w.attach_optimizer(trainer.optimizers[0])

        def on_train_batch_end(
            self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
        ) -> None:
            loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
            if loss is not None and not w.closed:
                w.step(loss)

    return TorchxrayCallback()
