"""A memoised fake probe gives the same report as a full one, field by field, on real models.

The reference is ``run_probe(..., memoise=False)``, which runs every block. transformers' decoder
layers are memoised through their cache (`_fake.memo_cache`): these tests check that they are
(the fast path is taken, not merely equal by accident of never being taken) and that the checks
refusing a replay work.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from fixtures.real import ENTRIES, build
from torch import nn

from torchxray import demo
from torchxray.probe import ProbeReport, run_probe


def fields(rep: ProbeReport) -> dict[str, Any]:
    """Everything a fake report says, as plain values: per module its class, call count, and per
    call every input and output leaf (name, shape, dtype, device) and its FLOPs."""
    records = {}
    for path, rec in rep.records.items():
        calls = [
            (
                tuple(_leaf(x) for x in call.inputs),
                tuple(_leaf(x) for x in call.outputs),
                call.flops,
                call.complete,
            )
            for call in rec.call_records
        ]
        records[path] = (rec.cls, rec.calls, rec.input_shapes, rec.output_shapes, rec.flops, calls)
    return {
        "ok": rep.ok,
        "error": rep.error,
        "device": rep.device,
        "total_flops": rep.total_flops,
        "paths": list(rep.records),
        "records": records,
    }


def _leaf(x: Any) -> Any:
    if isinstance(x, str):
        return x
    return (x.name, x.shape, x.dtype, x.device)


def assert_same(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> ProbeReport:
    memo = run_probe(model, args, kwargs, memoise=True)
    full = run_probe(model, args, kwargs, memoise=False)
    assert not full.memoised
    a, b = fields(memo), fields(full)
    assert a["paths"] == b["paths"]
    for path in b["paths"]:  # one module at a time, so a failure names it
        assert a["records"][path] == b["records"][path], path
    assert a == b
    assert memo.records == full.records
    return memo


@pytest.mark.parametrize("name", list(ENTRIES))
def test_zoo_memoised_equals_full(name: str) -> None:
    model, args, kwargs = build(name)
    rep = assert_same(model, args, kwargs)
    assert rep.ok, rep.error


def _demo_models() -> dict[str, tuple[nn.Module, tuple[Any, ...]]]:
    torch.manual_seed(0)
    return {
        "resnet_ish": (demo.resnet_ish().eval(), (demo.images(),)),
        "tiny_transformer": (demo.tiny_transformer().eval(), (demo.tokens(),)),
        "llama_like": (demo.llama_like(layers=4).eval(), (demo.tokens(vocab=100),)),
        "many_modules": (demo.many_modules(200), (torch.randn(2, 4),)),
    }


@pytest.mark.parametrize("name", ["resnet_ish", "tiny_transformer", "llama_like", "many_modules"])
def test_demo_memoised_equals_full(name: str) -> None:
    model, args = _demo_models()[name]
    rep = assert_same(model, args, {})
    assert rep.ok and rep.memoised


def _meta_llama(layers: int = 6, **extra: Any) -> nn.Module:
    import transformers

    cfg = transformers.LlamaConfig(
        vocab_size=256,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        **extra,
    )
    with torch.device("meta"):
        return transformers.LlamaForCausalLM(cfg).eval()


def test_transformers_decoder_layers_replay_through_their_cache() -> None:
    """Layers 0 and 1 run (the second checks the first), the other four are replayed."""
    model = _meta_llama(6)
    ids = torch.zeros(1, 16, dtype=torch.long, device="meta")
    rep = assert_same(model, (), {"input_ids": ids})
    assert rep.ok and rep.device == "meta"
    layers = {p for p in rep.memoised if p.count(".") == 2}
    assert layers == {f"model.layers.{i}" for i in range(2, 6)}
    assert rep["model.layers.5.self_attn.k_proj"].output_shapes == ((1, 16, 32),)


def test_cache_state_after_replay_equals_a_full_run() -> None:
    """The replayed layers leave the cache as running them would: the report of a model that
    reads the cache after its layers (its length, per layer) depends on it."""

    class ReadsCache(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = _meta_llama(5).model

        def forward(self, input_ids: torch.Tensor) -> Any:
            out = self.inner(input_ids=input_ids, use_cache=True)
            cache = out.past_key_values
            keys = [layer.keys for layer in cache.layers]
            # shapes of every slot: a replay that skipped a slot would leave None or another shape
            return [torch.empty(k.shape, device="meta") for k in keys]

    model = ReadsCache().eval()
    ids = torch.zeros(1, 12, dtype=torch.long, device="meta")
    rep = assert_same(model, (ids,), {})
    assert rep.ok and "inner.layers.4" in rep.memoised
    assert len(rep[""].outputs) == 5


def _custom_layer_model(offset: int, special: int | None) -> tuple[nn.Module, Any]:
    """Layers of a class that passes for a transformers one (its ``__module__``), writing to cache
    slot ``layer_idx + offset`` and, for layer `special`, calling a submodule the others skip."""
    import transformers

    class Layer(nn.Module):
        def __init__(self, layer_idx: int, n: int) -> None:
            super().__init__()
            self.layer_idx, self.n = layer_idx, n
            self.proj = nn.Linear(8, 8)
            self.extra = nn.Linear(8, 8)

        def forward(self, x: torch.Tensor, cache: Any = None) -> torch.Tensor:
            y = self.proj(x)
            kv = y.view(1, 1, *y.shape)
            cache.update(kv, kv, (self.layer_idx + offset) % self.n)
            if self.layer_idx == special:
                y = self.extra(y)
            return y

    Layer.__module__ = "transformers.models.toy"

    class Model(nn.Module):
        def __init__(self, n: int = 5) -> None:
            super().__init__()
            self.n = n
            self.layers = nn.ModuleList(Layer(i, n) for i in range(n))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            cfg = transformers.LlamaConfig(num_hidden_layers=self.n)
            cache = transformers.DynamicCache(config=cfg)
            for layer in self.layers:
                x = layer(x, cache=cache)
            return x

    return Model().eval(), (torch.randn(3, 8),)


def test_custom_layers_writing_their_own_slot_are_replayed() -> None:
    model, args = _custom_layer_model(offset=0, special=None)
    rep = assert_same(model, args, {})
    assert {"layers.2", "layers.3", "layers.4"} <= set(rep.memoised)


def test_a_layer_writing_another_slot_is_not_replayed() -> None:
    model, args = _custom_layer_model(offset=1, special=None)
    rep = assert_same(model, args, {})
    assert not any(p.startswith("layers.") and p.count(".") == 1 for p in rep.memoised)


def test_a_second_layer_that_differs_stops_the_replay() -> None:
    """Layer 1 calls a submodule that layer 0 does not: the check of the second index refuses."""
    model, args = _custom_layer_model(offset=0, special=1)
    rep = assert_same(model, args, {})
    assert rep["layers.1.extra"].calls == 1
    assert not any(p.count(".") == 1 and p.startswith("layers.") for p in rep.memoised)


def test_user_attribute_named_layer_idx_keeps_blocks_apart() -> None:
    """Outside transformers ``layer_idx`` is just an attribute: blocks with different values are
    not interchangeable, so none of them is replayed (their Linears still are)."""
    model, args = _custom_layer_model(offset=0, special=None)
    for layer in model.layers:
        type(layer).__module__ = __name__
    rep = assert_same(model, args, {})
    assert not any(p.count(".") == 1 and p.startswith("layers.") for p in rep.memoised)
    assert "layers.2.proj" in rep.memoised


_SMALL = dict(
    vocab_size=256,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=6,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
)
_TOKENS = dict(pad_token_id=0, bos_token_id=0, eos_token_id=0)
META_DECODERS = {
    "mistral": ("MistralConfig", "MistralForCausalLM", _SMALL, "model.layers"),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", dict(_SMALL, head_dim=16), "model.layers"),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", dict(_SMALL, **_TOKENS), "model.layers"),
    "mixtral": (
        "MixtralConfig",
        "MixtralForCausalLM",
        dict(_SMALL, num_local_experts=4, num_experts_per_tok=2),
        "model.layers",
    ),
    "gpt2": (
        "GPT2Config",
        "GPT2LMHeadModel",
        dict(vocab_size=256, n_embd=64, n_layer=6, n_head=4, n_positions=64, **_TOKENS),
        "transformer.h",
    ),
    # Sliding and full attention alternate: layers differ in more than their index, and none of
    # them is replayed; the report must still equal the full one.
    "gemma2": (
        "Gemma2Config",
        "Gemma2ForCausalLM",
        dict(_SMALL, head_dim=16, sliding_window=8),
        None,
    ),
}


@pytest.mark.parametrize("name", list(META_DECODERS))
def test_meta_transformers_decoders_memoised_equal_full(name: str) -> None:
    import transformers

    config, cls, kw, layers = META_DECODERS[name]
    with torch.device("meta"):
        cfg = getattr(transformers, config)(**kw)
        model = getattr(transformers, cls)(cfg).to(torch.bfloat16).eval()
    ids = torch.zeros(1, 16, dtype=torch.long, device="meta")
    rep = assert_same(model, (ids,), {})
    assert rep.ok
    if layers is not None:
        replayed = {p for p in rep.memoised if p.rsplit(".", 1)[0] == layers}
        assert replayed == {f"{layers}.{i}" for i in range(2, 6)}
