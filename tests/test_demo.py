"""The built-in demo models: they run, have the sizes their docs promise, and cost no memory on meta."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn

from torchxray import demo


def test_resnet_ish_classifies_an_image_batch() -> None:
    model = demo.resnet_ish()
    assert not model.training
    assert model(demo.images()).shape == (2, 10)
    assert demo.resnet_ish(num_classes=3)(demo.images(batch=1)).shape == (1, 3)


def test_demo_models_are_reproducible() -> None:
    a, b = demo.resnet_ish(), demo.resnet_ish()
    assert torch.equal(a.conv1.weight, b.conv1.weight)
    assert torch.equal(demo.images(), demo.images())
    assert torch.equal(demo.tokens(), demo.tokens())


def test_tiny_transformer_maps_tokens_to_logits() -> None:
    model = demo.tiny_transformer()
    ids = demo.tokens()
    assert ids.dtype == torch.long and ids.shape == (2, 16) and int(ids.max()) < 100
    assert model(ids).shape == (2, 16, 100)


@pytest.mark.parametrize(
    "module",
    [
        demo.BasicBlock(4, 8, 2),
        demo.Block(8, 2),
        demo.RMSNorm(8),
        demo.LlamaAttention(8, 4, 2),
        demo.LlamaMLP(8, 16),
        demo.LlamaDecoderLayer(8, 4, 2, 16),
        demo.TinyTransformer(dim=8, heads=2),
        demo.ResNetIsh(width=4),
        demo.LlamaLike(vocab=10, dim=8, n_layers=1, heads=2, kv_heads=1, hidden=16),
    ],
    ids=lambda m: type(m).__name__,
)
def test_constructor_arguments_are_kept_as_attributes(module: nn.Module) -> None:
    # Forms prefill a custom class from attributes named like its constructor's parameters.
    for name in inspect.signature(type(module).__init__).parameters:
        if name != "self":
            assert hasattr(module, name), f"{type(module).__name__} does not keep {name!r}"


def test_llama_like_has_70b_parameters_on_meta_without_storage() -> None:
    model = demo.llama_like()
    params = list(model.parameters())
    assert all(p.is_meta for p in params)
    total = sum(p.numel() for p in params)
    assert 70e9 < total < 71e9, total
    assert len(model.layers) == 80
    logits = model(torch.zeros(1, 4, dtype=torch.long, device="meta"))
    assert logits.shape == (1, 4, 128256)


def test_llama_like_small_runs_for_real() -> None:
    model = demo.llama_like(
        vocab=50, dim=32, layers=2, heads=4, kv_heads=2, hidden=64, device="cpu"
    )
    out = model(demo.tokens(vocab=50))
    assert out.shape == (2, 16, 50) and torch.isfinite(out).all()


def test_many_modules_has_exactly_n_modules_and_no_identical_neighbours() -> None:
    model = demo.many_modules(10_000)
    assert sum(1 for _ in model.modules()) == 10_000
    widths = [stage[0].out_features for stage in model]
    assert all(a != b for a, b in zip(widths, widths[1:]))
    assert model(torch.randn(2, 4)).shape[0] == 2
