"""catalog(): the "replace with" classes; register() and resolve()."""

from __future__ import annotations

import importlib
from collections.abc import Iterator

import pytest
import torch.nn as nn
from fixtures.models import TinyCNN, repeated_blocks, tiny_cnn

from torchxray.catalog import CatalogEntry, catalog, register, resolve, unregister

# By import path: the package attribute `torchxray.catalog` is the function, not this module.
catalog_module = importlib.import_module("torchxray.catalog")


@pytest.fixture(autouse=True)
def clean_registry() -> Iterator[None]:
    saved = dict(catalog_module._REGISTRY)
    yield
    catalog_module._REGISTRY.clear()
    catalog_module._REGISTRY.update(saved)


def names(entries: tuple[CatalogEntry, ...]) -> list[str]:
    return [e.name for e in entries]


def test_torch_layers_are_offered_without_module_or_losses() -> None:
    all_names = names(catalog())
    for expected in ("Linear", "Conv2d", "LayerNorm", "MultiheadAttention", "Sequential", "GELU"):
        assert expected in all_names
    assert "Module" not in all_names and "MSELoss" not in all_names
    linear = next(e for e in catalog() if e.name == "Linear")
    assert linear.group == "torch" and linear.qualname == "torch.nn.modules.linear.Linear"
    assert linear.doc.startswith("Applies an affine linear transformation")


def test_query_is_case_insensitive_and_ranked() -> None:
    hits = names(catalog("CONV2D"))
    assert hits[0] == "Conv2d"  # exact name first
    assert set(hits) == {"Conv2d", "LazyConv2d"}
    prefix = names(catalog("conv"))
    first_non_prefix = next(i for i, n in enumerate(prefix) if not n.lower().startswith("conv"))
    assert all(not n.lower().startswith("conv") for n in prefix[first_non_prefix:])
    assert "LazyConv1d" in prefix[first_non_prefix:]
    # qualname-only matches come last: "modules.pooling" is in no class name
    pooling = catalog("modules.pooling")
    assert pooling and all("pooling" in e.qualname for e in pooling)
    assert catalog("no such layer anywhere") == ()


def test_model_classes_come_first_with_their_doc() -> None:
    model = repeated_blocks(2)
    entries = catalog(model=model)
    own = [e for e in entries if e.group == "model"]
    assert names(own) == ["Decoder", "DecoderLayer"]
    assert entries[: len(own)] == tuple(own)
    assert own[1].doc == "A transformer-ish block: attention projections, MLP, norms."
    assert own[0].doc == ""  # Decoder has no docstring of its own; nn.Module's is not shown
    # Prefix beats substring; among substrings the model's own class beats torch's.
    layer = names(catalog("layer", model=model))
    assert layer[:2] == ["LayerNorm", "DecoderLayer"]
    assert layer.index("TransformerDecoderLayer") > 1
    assert "Decoder" not in names(catalog())  # only with the model


def test_register_validates_and_works_as_decorator() -> None:
    @register
    class Adapter(nn.Module):
        """Low-rank adapter.

        Longer text that the catalog does not show."""

    entry = next(e for e in catalog("adapter"))
    assert (entry.name, entry.group, entry.doc) == ("Adapter", "registered", "Low-rank adapter.")
    assert resolve(entry.qualname) is Adapter
    assert register(Adapter) is Adapter  # registering again is harmless
    assert names(catalog("adapter")) == ["Adapter"]
    unregister(Adapter)
    assert catalog("adapter") == ()
    with pytest.raises(KeyError, match="not registered"):
        unregister(Adapter)
    with pytest.raises(TypeError, match="nn.Module subclass, got the class int"):
        register(int)
    with pytest.raises(TypeError, match="nn.Module subclass"):
        register(nn.Linear(2, 2))  # type: ignore[type-var]


def test_registered_model_class_shows_once_as_model() -> None:
    register(TinyCNN)
    entries = [e for e in catalog(model=tiny_cnn()) if e.name == "TinyCNN"]
    assert [e.group for e in entries] == ["model"]
    assert [e.group for e in catalog("tinycnn")] == ["registered"]


def test_resolve() -> None:
    assert resolve("torch.nn.modules.conv.Conv2d") is nn.Conv2d
    assert resolve("torch.nn.Conv2d") is nn.Conv2d  # public import path
    assert resolve("Conv2d") is nn.Conv2d  # unambiguous bare name
    assert resolve("fixtures.models.DecoderLayer").__name__ == "DecoderLayer"

    class Local(nn.Module):
        pass

    model = nn.Sequential(Local())
    assert resolve(f"{Local.__module__}.{Local.__qualname__}", model=model) is Local
    with pytest.raises(KeyError, match="did you mean .*Conv2d"):
        resolve("torch.nn.Conv2dd")
    with pytest.raises(KeyError, match="tx.register"):
        resolve("nowhere.Thing")
    with pytest.raises(KeyError):
        resolve("torch.nn.functional.relu")  # importable, but not a module class
    with pytest.raises(TypeError, match="qualname string"):
        resolve(nn.Linear)  # type: ignore[arg-type]


def test_catalog_rejects_non_module_model() -> None:
    with pytest.raises(TypeError, match="must be an nn.Module"):
        catalog(model="resnet")  # type: ignore[arg-type]


class _SelfAttention(nn.Module):
    """A model's own attention: nothing in torch.nn to inherit its role from."""

    def forward(self, hidden: object) -> object:
        return hidden


def test_a_role_is_what_a_class_is_not_the_file_it_lives_in() -> None:
    # Issue 43 item 13: MultiheadAttention lives in torch.nn's activation.py, yet its forward
    # takes query, key and value; it is an attention layer, not an activation.
    relu = catalog(like=nn.ReLU())
    fits = [catalog_module._fit(resolve(e.qualname), nn.ReLU) for e in relu]
    activations = names(relu)[: fits.index(3)]
    assert {"ReLU", "GELU", "SiLU", "PReLU", "Softmax", "Tanh"} <= set(activations)
    assert "MultiheadAttention" not in activations
    assert names(relu).index("MultiheadAttention") > len(activations)
    model = nn.Sequential(_SelfAttention(), nn.ReLU())
    attention = names(catalog(model=model, like=nn.MultiheadAttention(8, 2)))
    assert attention[:2] == ["MultiheadAttention", "_SelfAttention"]
    assert attention.index("ReLU") > 2
    # The same rule keeps a file's other kinds apart: transformer.py's decoders (which take the
    # memory too) from its encoders; Linear's file still groups Linear, LazyLinear, Identity.
    role = catalog_module._role
    assert role(nn.TransformerEncoderLayer) == role(nn.TransformerEncoder)
    assert role(nn.TransformerEncoderLayer) != role(nn.TransformerDecoderLayer)
    assert role(nn.Linear) == role(nn.LazyLinear) == role(nn.Identity) == "linear"
