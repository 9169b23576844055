"""The Hugging Face Trainer's loop handed to a watch through its TrainerCallback: the optimizer
the Trainer builds inside train(), its logged loss at the step it was logged, and every hook off
after close. (Lightning's callback: tests/test_watch_lightning.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import torchxray as tx

transformers = pytest.importorskip("transformers")


class _Tokens(torch.utils.data.Dataset):  # type: ignore[type-arg]
    def __len__(self) -> int:
        return 64

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        ids = torch.randint(0, 64, (12,), generator=torch.Generator().manual_seed(i))
        return {"input_ids": ids, "labels": ids.clone()}


def test_hf_trainer_callback_gives_the_watch_its_optimizer_and_loss(tmp_path: Path) -> None:
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32,
    )  # fmt: skip
    model = transformers.LlamaForCausalLM(config)
    w = tx.watch(model, every=2)
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path), max_steps=6, logging_steps=2, per_device_train_batch_size=4,
        report_to=[], save_strategy="no", use_cpu=True, disable_tqdm=True,
    )  # fmt: skip
    trainer = transformers.Trainer(
        model=model, args=args, train_dataset=_Tokens(), callbacks=[w.trainer_callback()]
    )
    trainer.train()
    assert w.optimizer is not None and w.steps == 6
    assert [s for s, _ in w.loss] == [2, 4, 6]
    assert [s for s, _ in w["model.layers.0.mlp.down_proj"].grad_norm] == [1, 3, 5]
    assert w["model.layers.1.self_attn.q_proj"].update_ratio
    assert w.nonfinite is None
    w.close()
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())
    assert not w.optimizer._optimizer_step_pre_hooks
