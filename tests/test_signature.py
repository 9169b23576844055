"""The one signature resolver (`torchxray._signature`): synthetic wrappers of each kind libraries
use, refusals in one sentence, and the newest transformers, whose ``kernels`` decorator replaces
the attention classes' ``__init__`` with ``new_init(self, *args, **kwargs)`` (issue 58)."""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any

import pytest
import torch
from torch import nn

import torchxray as tx
from torchxray._forms.rebuild.compare import differences, sentence
from torchxray._forms.rebuild.parts import parts
from torchxray._signature import SignatureUnknown, original, resolve


def mismatch(live: nn.Module, built: nn.Module) -> str | None:
    """The first part in which ``built`` differs from ``live``, None where none does (the
    forms' comparison, ``_forms/rebuild/compare.py``)."""
    a, b = parts(live), parts(built)
    diffs = differences(a, b)
    return sentence(diffs, a, b) if diffs else None


def _text(obj: Any) -> str:
    return str(resolve(obj))


# --- wrappers of each kind ---------------------------------------------------------------------


def _no_wraps(fn: Any) -> Any:
    def inner(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return inner


def _in_defaults(fn: Any) -> Any:
    def inner(*args: Any, _fn: Any = fn, **kwargs: Any) -> Any:
        return _fn(*args, **kwargs)

    return inner


def _with_wraps(fn: Any) -> Any:
    @functools.wraps(fn)
    def inner(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return inner


def _kernels_style(cls: type) -> type:
    """A class decorator as ``kernels.use_kernelized_func`` writes it: ``__init__`` replaced."""
    orig_init = cls.__init__  # type: ignore[misc]

    def new_init(self: Any, *args: Any, **kwargs: Any) -> None:
        orig_init(self, *args, **kwargs)
        self.__dict__.setdefault("_extra", {})

    cls.__init__ = new_init  # type: ignore[misc]
    return cls


def _subclassing(cls: type) -> type:
    """A class decorator that returns a subclass handing everything to its parent."""

    class Wrapped(cls):  # type: ignore[valid-type, misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)

    Wrapped.__name__ = Wrapped.__qualname__ = cls.__name__
    return Wrapped


_REGISTRY: dict[str, Any] = {}


def _registered_init(self: Any, *args: Any, **kwargs: Any) -> None:
    """A replacement holding the original nowhere it can be read (a registry): only the class's
    own source tells what it takes."""
    _REGISTRY[type(self).__qualname__](self, *args, **kwargs)


def _replace_from_registry(cls: type) -> type:
    _REGISTRY[cls.__qualname__] = cls.__init__  # type: ignore[misc]
    cls.__init__ = _registered_init  # type: ignore[misc]
    return cls


class Plain(nn.Module):
    def __init__(self, width: int, depth: int = 2, *, act: str = "relu") -> None:
        super().__init__()
        self.lin = nn.Linear(width, width * depth)
        self.act = act


@_kernels_style
class Kerneled(Plain):
    pass


@_kernels_style
class KerneledOwn(nn.Module):
    def __init__(self, dim: int, heads: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim * heads)


@_subclassing
class Sub(Plain):
    pass


@_replace_from_registry
class FromSource(nn.Module):
    def __init__(self, dim: int, scale: float = 0.5, name: str = "x") -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)


@_replace_from_registry
class NonLiteral(nn.Module):
    def __init__(self, dim: int, act: type = nn.ReLU) -> None:
        super().__init__()
        self.act = act()


class Decorated(nn.Module):
    @_no_wraps
    def __init__(self, channels: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(channels, eps=eps)

    @_no_wraps
    def forward(self, x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        return self.norm(x) * scale


class InDefaults(nn.Module):
    @_in_defaults
    def __init__(self, features: int) -> None:
        super().__init__()
        self.lin = nn.Linear(features, features)


class Chained(nn.Module):
    @_with_wraps
    @_no_wraps
    @_with_wraps
    def __init__(self, n: int, bias: bool = True) -> None:
        super().__init__()
        self.lin = nn.Linear(n, n, bias=bias)


class ViaPartialMethod(nn.Module):
    def _setup(self, width: int, depth: int = 1) -> None:
        nn.Module.__init__(self)
        self.lin = nn.Linear(width, width)

    __init__ = functools.partialmethod(_setup, depth=3)  # type: ignore[assignment]


class HandSet(nn.Module):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self.lin = nn.Linear(kwargs.get("size", 2), 2)


HandSet.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [inspect.Parameter("size", inspect.Parameter.KEYWORD_ONLY, default=2)]
)


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        (Plain, "(width: int, depth: int = 2, *, act: str = 'relu') -> None"),
        (Kerneled, "(width: int, depth: int = 2, *, act: str = 'relu') -> None"),
        (KerneledOwn, "(dim: int, heads: int = 4) -> None"),
        (Sub, "(width: int, depth: int = 2, *, act: str = 'relu') -> None"),
        (FromSource, "(dim: 'int', scale: 'float' = 0.5, name: 'str' = 'x')"),
        (Decorated, "(channels: int, eps: float = 1e-05) -> None"),
        (InDefaults, "(features: int) -> None"),
        (Chained, "(n: int, bias: bool = True) -> None"),
        (ViaPartialMethod, "(width: int, *, depth: int = 3) -> None"),
        (HandSet, "(*, size=2)"),
        (functools.partial(Plain, 8), "(depth: int = 2, *, act: str = 'relu') -> None"),
        (
            functools.partial(Kerneled, act="gelu"),
            "(width: int, depth: int = 2, *, act: str = 'gelu') -> None",
        ),  # fmt: skip
        (Decorated.forward, "(self, x: torch.Tensor, scale: float = 1.0) -> torch.Tensor"),
    ],
    ids=lambda v: getattr(v, "__name__", None) or type(v).__name__,
)
def test_sees_through(obj: Any, want: str) -> None:
    assert _text(obj) == want


def test_bound_forward_and_original() -> None:
    m = Decorated(4)
    assert _text(m.forward) == "(x: torch.Tensor, scale: float = 1.0) -> torch.Tensor"
    assert original(Decorated.forward).__qualname__ == "Decorated.forward"
    assert original(Kerneled.__init__).__qualname__ == "Plain.__init__"


def test_a_function_that_takes_everything_itself_keeps_its_signature() -> None:
    def helper(x: Any) -> Any:
        return x

    def forward(self: Any, *xs: Any) -> Any:  # holds `helper`, hands it no *xs whole
        return helper(torch.cat(xs))

    assert str(resolve(forward)) == "(self: Any, *xs: Any) -> Any"
    assert _text(nn.Sequential) == "(*args)"  # torch's own overloaded constructor, as written


def test_refuses_in_one_sentence_when_it_cannot_tell() -> None:
    def a(x: int) -> int:
        return x

    def b(y: str) -> str:
        return y

    def both(*args: Any, **kwargs: Any) -> Any:
        return a(*args, **kwargs), b(*args, **kwargs)

    with pytest.raises(SignatureUnknown) as err:
        resolve(both)
    msg = str(err.value)
    assert "a, b" in msg and msg.count(". ") == 0 and "\n" not in msg
    assert isinstance(err.value, TypeError)

    with pytest.raises(SignatureUnknown, match=r"default of act \(nn.ReLU\) is not a literal"):
        resolve(NonLiteral)


def test_forms_use_it_and_build_exactly() -> None:
    for cls, args in ((Kerneled, (8, 3)), (KerneledOwn, (8, 2)), (Decorated, (6,)), (Sub, (4,))):
        m = cls(*args)
        f = tx.form(m)
        with torch.device("meta"):
            assert mismatch(m, f.build()) is None, cls.__name__
    with pytest.raises(TypeError, match="cannot read the constructor signature of NonLiteral"):
        tx.form(NonLiteral(3))


def test_source_pane_and_catalog_see_the_wrapped_function() -> None:
    src = tx.source(Decorated.forward)
    assert src.text is not None and "def forward(self, x" in src.text
    assert src.note is not None and "wraps" in src.note
    from torchxray.catalog import _inputs

    assert _inputs(Decorated) == 1


# --- the newest transformers (and the pinned one: the same tests pass on both) ------------------

ATTENTIONS = {
    "LlamaAttention": ("LlamaConfig", "llama"),
    "Qwen2Attention": ("Qwen2Config", "qwen2"),
    "MistralAttention": ("MistralConfig", "mistral"),
    "Gemma2Attention": ("Gemma2Config", "gemma2"),
}
SMALL = dict(
    vocab_size=128,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
)


@pytest.mark.parametrize("name", list(ATTENTIONS))
def test_transformers_attention_forms_are_exact(name: str) -> None:
    transformers = pytest.importorskip("transformers")
    config_cls, module = ATTENTIONS[name]
    cls = getattr(
        __import__(f"transformers.models.{module}.modeling_{module}", fromlist=[name]), name
    )
    cfg = getattr(transformers, config_cls)(**SMALL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = cls(cfg, layer_idx=1)
        assert [p.name for p in resolve(cls).parameters.values()] == ["config", "layer_idx"]
        f = tx.form(m)
        assert f.values["layer_idx"] == 1
        with torch.device("meta"):
            assert mismatch(m, f.build()) is None


def test_transformers_llama_heads_edit_applies() -> None:
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(**SMALL)
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.LlamaForCausalLM(cfg).eval()
        path = "model.layers.0.self_attn"
        old = model.get_submodule(path)
        log = tx.PatchLog(model)
        log.edit(path, **{"config.num_attention_heads": 8})
    new = model.get_submodule(path)
    assert new is not old and new.config.num_attention_heads == 8
    assert model.config.num_attention_heads == 4  # the shared config is untouched
    log.undo()
    assert model.get_submodule(path) is old


class Masked(nn.Conv2d):
    """PixelCNN's masked convolution: its own leading parameter, the rest handed to its parent."""

    def __init__(self, mask_type: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.mask_type = mask_type


class MaskedDefault(nn.Conv1d):
    def __init__(self, causal: bool = True, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.causal = causal


def test_own_leading_parameters_then_the_parents_that_args_and_kwargs_hand_on() -> None:
    assert _text(Masked).startswith("(mask_type: str, in_channels: int, out_channels: int,")
    # A default before the parent's required parameters: those are read by keyword.
    assert _text(MaskedDefault).startswith("(causal: bool = True, *, in_channels: int,")
    for m in (Masked("A", 1, 4, 7, 1, 3, bias=False), MaskedDefault(False, 2, 3, 5, dilation=2)):
        f = tx.form(m)
        assert f.inexact == "", f.inexact
        with torch.device("meta"):
            assert mismatch(m, f.build()) is None, type(m).__name__
