"""Reading a real model through ``Session.handle``: the Overview labels inputs by argument name
(the saved view too), "names only" filters by each module's own name, and "Replace with..." lists
the classes that fit the selected module first."""

from __future__ import annotations

from typing import Any

from torchxray._view.session import Session


def test_overview_inputs_are_labelled_by_argument_name() -> None:
    from fixtures.real import build

    model, args, kwargs = build("hf-llama")
    s = Session(model, args, kwargs)
    s.run_probe()
    s.handle({"kind": "select", "path": "model.layers.0"})
    inputs = s.overview()["probe"]["inputs"]
    assert inputs.startswith("hidden_states: 2×"), inputs
    assert "position_ids: 1×" in inputs and "position_embeddings[0]: " in inputs, inputs
    s.handle({"kind": "select", "path": "model.layers.0.mlp.down_proj"})
    assert s.overview()["probe"]["inputs"].startswith("input: "), s.overview()["probe"]
    # The saved notebook's read-only view labels them too.
    saved = s.snapshot()["overview"]["model.layers.0"]["probe"]["inputs"]
    assert saved.startswith("hidden_states: 2×") and "position_ids: 1×" in saved, saved
    # And where it was called from, as the live Overview says it.
    sites = s.snapshot()["overview"]["model.layers.0"]["sites"]
    assert sites and sites[0]["text"].startswith("hidden_states = decoder_layer("), sites


def test_filter_names_only_leaves_out_the_children_of_matches() -> None:
    from fixtures.real import build

    model, _, _ = build("hf-gpt2")
    s = Session(model)

    def matches(**opts: Any) -> list[str]:
        reply, _ = s.handle({"kind": "filter", "query": "attn", **opts})
        return [r["path"] for r in reply["rows"] if r["match"]]

    everything = matches()
    assert "transformer.h.0.attn.c_proj" in everything
    names = matches(names=True)
    assert "transformer.h.0.attn" in names and "transformer.h.0.attn.c_attn" in names
    assert not any(p.endswith(("c_proj", "resid_dropout")) for p in names), names
    assert set(names) < set(everything)
    regex, _ = s.handle({"kind": "filter", "query": "^attn$", "regex": True, "names": True})
    assert {r["path"] for r in regex["rows"] if r["match"]} == {
        p for p in names if p.endswith(".attn")
    }


def test_catalog_ranks_classes_that_fit_the_selected_module_first() -> None:
    from fixtures.real import build

    model, _, _ = build("hf-llama")
    s = Session(model)

    def names(path: str | None) -> list[str]:
        reply, _ = s.handle({"kind": "catalog", "path": path})
        return [e["name"] for e in reply["entries"]]

    plain = names(None)
    assert plain[0].startswith("Llama")  # the model's own classes first, as before
    linear = names("model.layers.0.mlp.down_proj")
    assert linear[0] == "Linear"
    assert set(linear[:4]) == {"Linear", "Bilinear", "LazyLinear", "Identity"}, linear[:6]
    norm = names("model.layers.0.input_layernorm")
    assert norm[0] == "LlamaRMSNorm"
    assert "RMSNorm" in norm[:12] and "LayerNorm" in norm[:12], norm[:12]
    assert norm.index("RMSNorm") < norm.index("Linear")
