"""The Explorer's static stand-in and text fallback: what a saved notebook shows without a
kernel or saved widget state."""

from __future__ import annotations

import pytest
import torch
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from torch import nn

import torchxray as tx
from torchxray import demo
from torchxray._view import static_html

WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(autouse=True)
def shell() -> InteractiveShell:
    """An IPython shell, as in a notebook: display() publishes outputs only inside one."""
    return InteractiveShell.instance()


def test_display_shows_the_widget_then_a_read_only_tree_and_a_one_line_text() -> None:
    ex = tx.explore(demo.resnet_ish(), demo.images())
    try:
        with capture_output() as out:
            ex._ipython_display_()
        widget, stand_in = out.outputs
        assert WIDGET in widget.data
        assert widget.data["text/plain"] == (
            "torchxray Explorer: ResNetIsh, 35 modules, 43.2k params; probe ok"
        )
        page = stand_in.data["text/html"]
        assert 'class="tx-static"' in page and "<details open>" in page
        assert "conv1" in page and "Conv2d" in page and "2×16×32×32" in page
        assert "<script" not in page  # opens and closes with <details>, no code runs
    finally:
        ex.close()


def test_the_stand_in_follows_edits_and_says_where_the_probe_failed() -> None:
    ex = tx.explore(demo.resnet_ish(), demo.images())
    try:
        with capture_output():
            ex._ipython_display_()
        shown: list[str] = []
        ex._static.update = lambda data, raw: shown.append(data["text/html"])  # type: ignore[method-assign]
        ex.edit("conv1", out_channels=24)
        assert shown and "Conv2d" in shown[-1] and "[failed]" in shown[-1]
        assert "probe failed at bn1" in repr(ex)
        ex.undo()
        assert "probe ok" in repr(ex) and "[failed]" not in shown[-1]
    finally:
        ex.close()
    assert repr(ex) == "torchxray Explorer (closed)"


def test_model_text_is_escaped() -> None:
    model = nn.Sequential()
    model.add_module("<script>alert(1)</script>", nn.Linear(2, 2))
    ex = tx.explore(model, torch.randn(1, 2))
    try:
        page = ex._stand_in()["text/html"]
    finally:
        ex.close()
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_a_big_model_stays_small() -> None:
    model = demo.many_modules(10_000)
    ex = tx.explore(model)
    try:
        page = ex._stand_in()["text/html"]
    finally:
        ex.close()
    assert len(page.encode()) < 200_000
    assert page.count("<div><b>") + page.count("<summary>") <= static_html.MAX_ROWS + 1
    assert f"the first {static_html.MAX_ROWS} rows of 10000 modules" in page


def test_the_stand_in_can_be_turned_off() -> None:
    ex = tx.explore(demo.resnet_ish())
    try:
        ex.static_fallback = False
        with capture_output() as out:
            ex._ipython_display_()
        assert len(out.outputs) == 1 and WIDGET in out.outputs[0].data
    finally:
        ex.close()
