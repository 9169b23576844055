"""The zoo: awkward models built in code, each with example inputs and one shape-keeping edit.

`CASES` maps a name to a `Case`. Every `build()` returns a fresh model (random init, tiny sizes) and
every `inputs()` fresh example arguments, so tests can run cases in any order.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn as nn
from torch.nn.utils import parametrizations as P

from . import blocks as B

Inputs = tuple[tuple[Any, ...], dict[str, Any]]


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[], nn.Module]
    inputs: Callable[[], Inputs]
    # (path, hyperparameter changes) for PatchLog.edit; the changes keep every output shape.
    edit: tuple[str, dict[str, Any]] | None = None
    fake: str = "ok"  # expected fake-probe outcome: "ok" or "fail" (a localised failure)
    real: str = "ok"
    fail_hint: str = ""  # a word the failure's hint or message must contain
    edit_may_refuse: bool = False  # the patch engine may refuse with a clear error instead
    tags: frozenset[str] = field(default_factory=frozenset)


def _x(
    *shape: int, dtype: torch.dtype = torch.float32, device: str = "cpu"
) -> Callable[[], Inputs]:
    def make() -> Inputs:
        g = torch.Generator().manual_seed(0)
        t = torch.randn(*shape, generator=g).to(dtype)
        return ((t.to(device),), {})

    return make


def _tokens(*shape: int, vocab: int = 10) -> Callable[[], Inputs]:
    return lambda: (
        (torch.randint(0, vocab, shape, generator=torch.Generator().manual_seed(0)),),
        {},
    )


def _quiet(fn: Callable[[], nn.Module]) -> Callable[[], nn.Module]:
    """Build without torch's deprecation chatter (jit.script, quantize_dynamic)."""

    def build() -> nn.Module:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()

    return build


def _eval(m: nn.Module) -> nn.Module:
    return m.eval()


def _encoder() -> nn.Module:
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.1, batch_first=True)
    return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)


def _encoder_fastpath() -> nn.Module:
    # eval + no grad lets torch take the fused "fast path" that skips submodule forwards.
    layer = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True)
    return nn.TransformerEncoder(layer, 2).eval()


def _decoder() -> nn.Module:
    return nn.TransformerDecoder(nn.TransformerDecoderLayer(16, 2, 32, batch_first=True), 2)


def _seq2(a: int, b: int) -> Callable[[], Inputs]:
    def make() -> Inputs:
        g = torch.Generator().manual_seed(0)
        return ((torch.randn(2, a, 16, generator=g), torch.randn(2, b, 16, generator=g)), {})

    return make


def _transformer() -> nn.Module:
    return nn.Transformer(16, 2, 1, 1, 32, dropout=0.0, batch_first=True)


def _lazy() -> nn.Module:
    return nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.Linear(8, 2))


def _param(kind: str) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        fn = {"weight_norm": P.weight_norm, "spectral_norm": P.spectral_norm}.get(kind)
        lin = fn(nn.Linear(4, 4)) if fn else P.orthogonal(nn.Linear(4, 4))
        return nn.Sequential(lin, nn.ReLU(), nn.Linear(4, 2))

    return build


def _quantized() -> nn.Module:
    m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    return torch.ao.quantization.quantize_dynamic(m, {nn.Linear}, dtype=torch.qint8)


def _scripted() -> nn.Module:
    return torch.jit.script(B.MLP((4, 8, 2)))


def _fx() -> nn.Module:
    return torch.fx.symbolic_trace(B.MLP((4, 8, 8, 2)))


def _compiled() -> nn.Module:
    # backend="eager" runs Dynamo's tracing without Inductor's C++ compile, which costs tens of
    # seconds per graph on this CPU; the wrapper (OptimizedModule) is what walking must handle.
    return torch.compile(B.MLP((4, 8, 2)), backend="eager")  # type: ignore[return-value]


def _user_hooks() -> nn.Module:
    m = B.MLP((4, 8, 2))

    def users_own_hook(mod: nn.Module, args: Any, out: Any) -> None:
        return None

    m.layers[0].register_forward_hook(users_own_hook)
    m.register_forward_pre_hook(lambda mod, args: None)
    return m


def _patched_forward() -> nn.Module:
    m = B.MLP((4, 8, 2))
    inner = m.layers[1]
    original = inner.forward
    inner.forward = lambda x: original(x) * 0.5  # type: ignore[method-assign]
    return m


def _deep() -> nn.Module:
    m: nn.Module = nn.Linear(4, 4)
    for _ in range(40):
        m = nn.Sequential(m, nn.ReLU())
    return m


def _meta() -> nn.Module:
    with torch.device("meta"):
        return B.MLP((4, 16, 2))


def _cell(keep: bool) -> Callable[[], nn.Module]:
    return lambda: B.cell_class(keep_source=keep)()


_DICT_IN = lambda: (  # noqa: E731
    ({"image": torch.randn(2, 6), "tokens": torch.randint(0, 10, (2, 3))},),
    {},
)
_KWARGS_IN = lambda: ((torch.randn(2, 4),), {"scale": 2.0, "mask": torch.rand(2, 4) > 0.5})  # noqa: E731
_BAG_IN = lambda: ((torch.randint(0, 20, (6,)), torch.tensor([0, 2, 4])), {})  # noqa: E731

_ALL = [
    Case("tiny_resnet", B.TinyResNet, _x(2, 3, 16, 16), ("layer1.0.body.1", {"bias": False})),
    Case("tiny_resnet_eval", lambda: B.TinyResNet().eval(), _x(1, 3, 8, 8), ("fc", {"bias": False})),
    Case("conv1d_groupnorm", B.Conv1dNet, _x(2, 2, 16), ("net.2", {"inplace": True})),
    Case(
        "conv3d",
        lambda: nn.Sequential(nn.Conv3d(1, 2, 3, padding=1), nn.BatchNorm3d(2), nn.ReLU()),
        _x(1, 1, 4, 4, 4),
        ("0", {"padding_mode": "replicate"}),
    ),
    Case("tiny_vit", B.TinyViT, _x(2, 3, 8, 8), ("head", {"bias": False})),
    Case("transformer_encoder", _encoder, _x(2, 5, 16), ("layers.0.norm2", {"eps": 1e-3})),
    Case("encoder_fastpath", _encoder_fastpath, _x(2, 5, 16), ("layers.1.dropout", {"p": 0.2})),
    Case("transformer_decoder", _decoder, _seq2(4, 5), ("layers.0.dropout", {"p": 0.3})),
    Case("nn_transformer", _transformer, _seq2(5, 4), ("decoder.norm", {"eps": 1e-3})),
    Case("tiny_gpt_tied", B.TinyGPT, _tokens(2, 8, vocab=50), ("blocks.0.mlp.1", {"approximate": "tanh"})),
    Case("moe", B.MoE, _x(6, 8), ("experts.1", {"bias": False}), fake="fail", fail_hint="real"),
    Case("rnn", lambda: B.RecurrentHead("RNN"), _x(2, 5, 6), ("rnn", {"nonlinearity": "relu"})),
    Case("lstm", lambda: B.RecurrentHead("LSTM"), _x(2, 5, 6), ("rnn", {"dropout": 0.25})),
    Case("gru", lambda: B.RecurrentHead("GRU"), _x(2, 5, 6), ("head", {"bias": False})),
    Case("multihead_attention", B.AttentionBlock, _x(2, 5, 16), ("attn", {"dropout": 0.2})),
    # Initialising lazy parameters would change the model: both probes refuse, saying why.
    Case("lazy_linear", _lazy, _x(3, 5), ("2", {"bias": False}), fake="fail", real="fail", fail_hint="lazy"),
    Case("weight_norm", _param("weight_norm"), _x(2, 4), ("2", {"bias": False})),
    Case("spectral_norm", _param("spectral_norm"), _x(2, 4), ("0", {"bias": False})),
    Case("orthogonal", _param("orthogonal"), _x(2, 4), ("1", {"inplace": True})),
    Case("quantized_dynamic", _quiet(_quantized), _x(2, 4), ("1", {"inplace": True})),
    Case("script_module", _quiet(_scripted), _x(2, 4), ("layers.0", {"bias": False}), edit_may_refuse=True),
    Case("fx_graph_module", _fx, _x(2, 4), ("layers.1", {"bias": False})),
    Case("compiled", _compiled, _x(2, 4), ("_orig_mod.layers.0", {"bias": False}), tags=frozenset({"compiled"})),
    Case("data_parallel", lambda: nn.DataParallel(B.MLP((4, 8, 2))), _x(3, 4), ("module.layers.1", {"bias": False})),
    Case("shared_two_paths", B.SharedTwice, _x(2, 6), ("a", {"bias": False})),
    Case("called_thrice", B.CalledThrice, _x(2, 6), ("block.0", {"bias": False})),
    Case("awkward_keys", B.AwkwardKeys, _x(2, 4), ("heads.with space", {"bias": False})),
    Case("notebook_cell", _cell(True), _x(2, 4), ("fc", {"bias": False})),
    Case("notebook_cell_lost_source", _cell(False), _x(2, 4), ("out", {"bias": False})),
    Case("raising_repr", B.HasBadRepr, _x(2, 4), ("out", {"bias": False})),
    Case("kwargs_forward", B.KwargsForward, _KWARGS_IN, ("proj", {"bias": False})),
    Case("dict_in_dict_out", B.DictIO, _DICT_IN, ("text", {"max_norm": 1.0})),
    Case("dataclass_out", B.DataclassOut, _x(2, 4), ("head", {"bias": False})),
    Case("meta_device", _meta, _x(2, 4, device="meta"), ("layers.0", {"bias": False})),
    Case("half", lambda: B.MLP((4, 8, 2)).half(), _x(2, 4, dtype=torch.float16), ("layers.1", {"bias": False})),
    Case("bfloat16", lambda: B.MLP((4, 8, 2)).to(torch.bfloat16), _x(2, 4, dtype=torch.bfloat16), ("layers.0", {"bias": False})),
    Case("embedding_bag_root", lambda: nn.EmbeddingBag(20, 4, mode="mean"), _BAG_IN, ("", {"mode": "sum"}), edit_may_refuse=True),
    Case("user_hooks", _user_hooks, _x(2, 4), ("layers.0", {"bias": False})),
    Case("instance_forward", _patched_forward, _x(2, 4), ("layers.0", {"bias": False})),
    Case("buffers_frozen", B.WithBuffers, _x(2, 4), ("head", {"bias": False})),
    Case("deep_nesting", _deep, _x(2, 4), ("0" + ".0" * 39, {"bias": False})),
    Case("paramless", lambda: nn.Sequential(nn.ReLU(), nn.Identity(), nn.Flatten()), _x(2, 4), ("0", {"inplace": True})),
]  # fmt: skip

CASES: dict[str, Case] = {c.name: c for c in _ALL}
assert len(CASES) == len(_ALL) >= 30
