"""Configs a library ships, read as a whole model's config arguments (``_forms/sources/shipped.py``,
issue 40 item 4): open_clip builds ``CLIP(**json)`` from one of the 144 JSON configs it ships; the
model keeps neither the name nor the dicts, and the form reads them back, ranked against what the
live model shows, then checked by a build. Real open_clip models on meta, nothing downloaded."""

from __future__ import annotations

import copy
import json
import logging
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import torchxray as tx
from torchxray._forms.sources.shipped import evidence, score, shipped

warnings.filterwarnings("ignore")
logging.getLogger().setLevel(logging.ERROR)


def _config(name: str) -> dict[str, Any]:
    oc = pytest.importorskip("open_clip")
    path = Path(oc.__file__).parent / "model_configs" / f"{name}.json"
    return dict(json.loads(path.read_text()))


def _clip(**cfg: Any) -> nn.Module:
    oc = pytest.importorskip("open_clip")
    with torch.device("meta"):
        return oc.CLIP(**cfg)


@pytest.mark.usefixtures("roomy_form_budget")
def test_the_shipped_config_the_model_was_built_from_ranks_first() -> None:
    rn50 = _config("RN50")
    m = _clip(**rn50)
    assert shipped(m, "vision_cfg")[0] == rn50["vision_cfg"]
    assert shipped(m, "text_cfg")[0] == rn50["text_cfg"]
    assert shipped(m, "embed_dim")[0] == rn50["embed_dim"]
    # The ranking: the numbers a config holds that the model shows, less those it does not.
    seen = evidence(m)
    assert score(rn50, seen) > score(_config("ViT-B-32"), seen)
    assert shipped(m, "no_such_parameter") == []


@pytest.mark.usefixtures("roomy_form_budget")
def test_a_model_built_from_a_shipped_config_rebuilds_exactly() -> None:
    cfg = _config("ViT-B-32")
    m = _clip(**cfg)
    f = tx.form(m)
    assert f.inexact == ""
    assert f["vision_cfg"].origin == "inferred"
    assert f["vision_cfg"].value == cfg["vision_cfg"]
    assert f["embed_dim"].value == cfg["embed_dim"]
    # Editing a model's own argument, as people do first.
    built = f.build(embed_dim=256)
    assert tuple(built.text_projection.shape) == (cfg["text_cfg"]["width"], 256)


def test_a_config_the_library_does_not_ship_is_refused_by_name() -> None:
    cfg = copy.deepcopy(_config("RN50"))
    cfg["text_cfg"]["layers"] = 3  # no shipped config has it: never a silent rebuild
    m = _clip(**cfg)
    f = tx.form(m)
    assert f.inexact.startswith("inexact: ")


def test_the_person_s_own_project_is_not_read(tmp_path: Path) -> None:
    # A single-file module's directory is the person's project (datasets, a virtual
    # environment): only an installed package's own files are read as configs it ships.
    import sys
    import types

    from torchxray._forms.sources.shipped import _packaged

    (tmp_path / "cfg.json").write_text(json.dumps({"width": 8, "depth": 2}))
    pkg = tmp_path / "mine"
    pkg.mkdir()
    (pkg / "cfg.json").write_text(json.dumps({"width": 8, "depth": 2}))
    for name, where, is_pkg in (
        ("mine_single", tmp_path / "mine_single.py", False),
        ("mine", pkg / "__init__.py", True),
    ):
        mod = types.ModuleType(name)
        mod.__file__ = str(where)
        if is_pkg:
            mod.__path__ = [str(pkg)]  # a package, but not an installed one
        sys.modules[name] = mod
        try:
            assert _packaged(name) == ()
        finally:
            del sys.modules[name]
            _packaged.cache_clear()
    oc = pytest.importorskip("open_clip")
    assert len(_packaged(oc.__name__)) > 100  # an installed library's configs are read
