"""`tx.summary` / `ex.summary()`: the torchinfo-like text, its rows as data, and its totals against
torchinfo's on a timm ResNet-50 and transformers BERT models."""

from __future__ import annotations

import csv
import io

import pytest
import torch
from torch import nn

import torchxray as tx
from torchxray import demo
from torchxray.summary import summarize


def _bert(tied: bool) -> nn.Module:
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(
        num_hidden_layers=4, hidden_size=64, num_attention_heads=2, intermediate_size=128
    )
    cls = transformers.BertForMaskedLM if tied else transformers.BertModel
    return cls(config).eval()


def _line(text: str, start: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(start))


def _count(text: str, label: str) -> int:
    return int(_line(text, label).split(":")[1].replace(",", ""))


def test_totals_agree_with_torchinfo_on_a_timm_resnet50() -> None:
    timm = pytest.importorskip("timm")
    torchinfo = pytest.importorskip("torchinfo")
    model = timm.create_model("resnet50", pretrained=False).eval()
    x = torch.randn(1, 3, 224, 224)
    theirs = torchinfo.summary(model, input_data=x, verbose=0)
    s = summarize(tx.walk(model), tx.probe(model, x), depth=1)
    t = s.totals
    assert (t.params, t.trainable, t.non_trainable) == (25_557_032, 25_557_032, 0)
    assert (t.params, t.trainable) == (theirs.total_params, theirs.trainable_params)
    assert t.param_bytes == theirs.total_param_bytes  # 102,228,128
    # 1x3x224x224 float32; torchinfo adds a few bytes of tensor overhead (602,176).
    assert t.input_bytes == x.numel() * 4 == 602_112
    assert 0 <= theirs.total_input - t.input_bytes < 100
    # Mult-adds from the fake probe's FLOPs (4,089,184,256) against torchinfo's own formula.
    assert t.mult_adds is not None
    assert abs(t.mult_adds - theirs.total_mult_adds) / theirs.total_mult_adds < 1e-4
    text = s.text()
    assert _count(text, "Total params") == theirs.total_params
    assert _line(text, "Total mult-adds").startswith("Total mult-adds: 4.09 G")
    # The Param # column adds up to the total (no tied weights here).
    assert sum(r.params for r in s.rows) == t.params


def test_param_totals_agree_with_torchinfo_on_an_untied_bert() -> None:
    torchinfo = pytest.importorskip("torchinfo")
    model = _bert(tied=False)
    ids = torch.randint(0, 1000, (1, 16))
    theirs = torchinfo.summary(model, input_data={"input_ids": ids}, verbose=0)
    text = tx.summary(model, input_ids=ids)
    assert _count(text, "Total params") == theirs.total_params == model.num_parameters()
    assert _count(text, "Trainable params") == theirs.trainable_params


def test_tied_weights_count_once_as_model_parameters_does() -> None:
    # torchinfo 1.8 counts a tied embedding again for the decoder that shares it; the summary
    # counts it once, as model.parameters() and transformers' num_parameters() do, and says so.
    torchinfo = pytest.importorskip("torchinfo")
    model = _bert(tied=True)
    ids = torch.randint(0, 1000, (1, 16))
    text = tx.summary(model, input_ids=ids, depth=4)
    ours = _count(text, "Total params")
    assert ours == sum(p.numel() for p in model.parameters()) == model.num_parameters()
    theirs = torchinfo.summary(model, input_data={"input_ids": ids}, verbose=0).total_params
    embedding = model.bert.embeddings.word_embeddings.weight.numel()
    assert theirs == ours + embedding
    assert "Shared parameters:" in text and "counted once" in text
    # Output names of a ModelOutput, and identical blocks folded at the depth limit.
    assert "logits: [1, 16, 30522]" in _line(text, "BertForMaskedLM ")
    assert "0–3 (BertLayer) ×4" in text


class _Recurrent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(4, 8, batch_first=True)
        self.heads = nn.Sequential(*[nn.Linear(8, 8) for _ in range(4)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _state = self.lstm(x)
        return self.heads(y)


def test_rows_to_a_depth_fold_identical_blocks_and_name_tuple_outputs() -> None:
    model = _Recurrent()
    rep = tx.probe(model, torch.randn(2, 3, 4))
    s = summarize(tx.walk(model), rep, depth=2)
    assert [(r.name, r.count) for r in s.rows] == [("", 1), ("lstm", 1), ("heads", 1), ("0–3", 4)]
    run = s.rows[3]
    assert (run.params, run.calls, run.outputs[0].shape, run.flops) == (
        4 * 72,
        4,
        (2, 3, 8),
        4 * 768,
    )
    text = s.text()
    # The LSTM's (output, (h, c)), by position; the Sequential's row ends the tree.
    assert "[0]: [2, 3, 8]" in _line(text, "├─lstm (LSTM)")
    assert "[1][0]: [1, 2, 8]" in text and "└─heads (Sequential)" in text
    assert "  └─0–3 (Linear) ×4" in text
    flat = summarize(tx.walk(model), rep, depth=2, fold=False)
    assert [r.name for r in flat.rows] == ["", "lstm", "heads", "0", "1", "2", "3"]


def test_depth_none_fits_the_screen_and_says_how_to_see_more() -> None:
    model = demo.resnet_ish()
    tree, rep = tx.walk(model), tx.probe(model, demo.images())
    assert summarize(tree, rep).depth == 4  # 35 rows fit: everything
    small = summarize(tree, rep, depth=1)
    assert [r.depth for r in small.rows].count(1) == 7 and max(r.depth for r in small.rows) == 1
    assert "Depth 1 of 4 (summary(depth=2) shows more)." in small.text()
    assert summarize(tree, rep, depth=99).depth == 4
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="depth"):
            summarize(tree, rep, depth=bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="nn.Module"):
        tx.summary("not a model")  # type: ignore[arg-type]


def test_a_module_registered_twice_is_one_row_marked_shared() -> None:
    shared = nn.Linear(3, 3)
    model = nn.Sequential(shared, nn.ReLU(), shared)
    text = tx.summary(model, torch.randn(1, 3))
    assert "2 (Linear, same module as 0)" in text and "(shared)" in text
    assert _count(text, "Total params") == 12


class _TwoPaths(nn.Module):
    """One Linear reached through two containers, both of which the forward calls (issue 39)."""

    def __init__(self) -> None:
        super().__init__()
        lin = nn.Linear(10, 10)
        self.a = nn.Sequential(lin, nn.ReLU())
        self.b = nn.Sequential(lin, nn.Linear(10, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.a(x))


class _Twice(nn.Module):
    """Issue 39's model: one Linear under two names, both called."""

    def __init__(self) -> None:
        super().__init__()
        self.a = self.b = nn.Linear(10, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.a(x) + self.b(x)


@pytest.mark.parametrize("model", [_Twice(), nn.Sequential(_Twice(), _Twice())])
def test_the_column_adds_up_to_the_total_with_or_without_inputs(model: nn.Module) -> None:
    for report in (None, tx.probe(model, torch.randn(1, 10))):
        for depth in (0, 1, 2):
            s = summarize(tx.walk(model), report, depth=depth)
            assert sum(r.params for r in s.rows) == s.totals.params, (report, depth)


@pytest.mark.parametrize("depth", [1, 2])
def test_a_module_reached_by_two_paths_counts_once_in_the_column(depth: int) -> None:
    model = _TwoPaths()
    s = summarize(tx.walk(model), tx.probe(model, torch.randn(1, 10)), depth=depth)
    assert s.totals.params == 110 + 22
    assert sum(r.params for r in s.rows) == s.totals.params  # was 110 + 132 at depth 1
    by_path = {r.path: r for r in s.rows}
    if depth == 1:
        assert (by_path["a"].params, by_path["a"].shared) == (110, 0)
        assert (by_path["b"].params, by_path["b"].shared) == (22, 110)
    else:
        assert (by_path["b.0"].params, by_path["b.0"].shared_with) == (0, "a.0")
    text = s.text()
    assert ("22 *" in _line(text, "└─b (Sequential)")) == (depth == 1)
    assert "Param # counts each tensor once, at its first row" in text


def test_tied_weights_are_marked_and_the_column_adds_up_at_every_depth() -> None:
    # Issue 43 item 10: the decoder's weight is the word embeddings'; the rows summed to 19.0 M
    # against a total of 11.2 M for a small BertConfig.
    model = _bert(tied=True)
    tree, rep = tx.walk(model), tx.probe(model, input_ids=torch.randint(0, 1000, (1, 8)))
    total = sum(p.numel() for p in model.parameters())
    tied = model.cls.predictions.decoder.weight.numel()
    for depth in range(0, 6):
        s = summarize(tree, rep, depth=depth)
        assert sum(r.params for r in s.rows) == s.totals.params == total, depth
    s = summarize(tree, rep, depth=1)
    cls_row = next(r for r in s.rows if r.path == "cls")
    assert cls_row.shared >= tied and cls_row.params == cls_row.params_total - cls_row.shared
    assert _line(s.text(), "└─cls (BertOnlyMLMHead)").endswith(" *")
    deep = summarize(tree, rep, depth=4).text()
    assert _line(deep, "    └─decoder (Linear)").endswith("(shared)")
    unfolded = list(csv.DictReader(io.StringIO(summarize(tree, rep, depth=1).csv())))
    assert [int(r["shared"]) for r in unfolded] == [0, 0, cls_row.shared]


def test_without_inputs_no_shapes_and_a_failed_probe_says_where() -> None:
    model = demo.resnet_ish()
    text = tx.summary(model)
    assert "Output shape" not in text and "Input size" not in text
    assert "no probe" in text.splitlines()[0] and "Params size: 172.90 kB" in text
    model.conv1 = nn.Conv2d(3, 24, 3, padding=1, bias=False)
    failed = tx.summary(model, demo.images())
    assert "probe failed at bn1 (BatchNorm2d): RuntimeError" in failed.splitlines()[0]
    assert "Total mult-adds: -- (the probe failed)" in failed


def test_csv_has_one_line_per_module_with_names_and_counts() -> None:
    model = _bert(tied=False)
    rep = tx.probe(model, input_ids=torch.randint(0, 1000, (1, 8)))
    flat = summarize(tx.walk(model), rep, depth=3, fold=False)
    table = list(csv.DictReader(io.StringIO(flat.csv())))
    assert len(table) == len(flat.rows)
    assert [r["path"] for r in table if r["depth"] == "2"][:2] == [
        "embeddings.word_embeddings",
        "embeddings.position_embeddings",
    ]
    root = table[0]
    assert root["class"] == "BertModel" and root["outputs"].startswith("last_hidden_state: [1, 8")
    assert int(root["params_total"]) == model.num_parameters()
    assert int(root["mult_adds"]) * 2 == int(root["flops"]) > 0


def test_print_and_repr_of_an_explorer_are_its_summary() -> None:
    ex = tx.explore(demo.resnet_ish(), demo.images())
    try:
        text = ex.summary()
        assert str(ex) == repr(ex) == text
        assert text.startswith("ResNetIsh: 35 modules; probe ok (fake)")
        assert "├─conv1 (Conv2d)" in text and "Total params: 43,226" in text
        assert ex.summary(depth=1).count("\n") < text.count("\n")
        # Beside the view, ipywidgets' text/plain stays one line.
        bundle = ex._repr_mimebundle_()
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        assert (
            data["text/plain"]
            == "torchxray Explorer: ResNetIsh, 35 modules, 43.2k params; probe ok"
        )
    finally:
        ex.close()
    assert repr(ex) == "torchxray Explorer (closed)"


def test_ipython_in_a_terminal_shows_the_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from torchxray import widget

    InteractiveShell.instance()
    monkeypatch.setattr(widget.background, "in_terminal", lambda: True)
    ex = tx.explore(demo.resnet_ish(), demo.images())
    try:
        with capture_output() as out:
            ex._ipython_display_()
        (shown,) = out.outputs
        assert shown.data == {"text/plain": ex.summary()}
    finally:
        ex.close()


def test_the_widget_request_sends_the_text_and_the_unfolded_csv() -> None:
    from torchxray._view import tools_summary
    from torchxray._view.session import Session

    model = nn.Sequential(*[nn.Linear(4, 4) for _ in range(5)])
    session = Session(model, (torch.randn(2, 4),))
    session.run_probe()
    reply, changed = session.handle({"kind": "summary"})
    assert reply["kind"] == "summary" and not changed
    assert (reply["depth"], reply["deepest"], reply["name"]) == (1, 1, "Sequential")
    assert "0–4 (Linear) ×5" in reply["text"]
    assert reply["csv"].count("\n") == 1 + 6  # header, the model, five Linear
    tools_summary.MAX_ROWS, kept = 3, tools_summary.MAX_ROWS
    try:
        refused, _ = session.handle({"kind": "summary", "depth": 1})
    finally:
        tools_summary.MAX_ROWS = kept
    assert refused["kind"] == "error" and "pick a smaller depth" in refused["message"]


@pytest.mark.parametrize("name", ["efficientnet_b0", "resnet18", "mobilenetv3_small_100"])
def test_pass_and_total_sizes_are_torchinfos_figures(name: str) -> None:
    # Issue 43 item 9: efficientnet_b0 showed 182 MB / 204 MB where torchinfo shows 54 MB / 76 MB
    # under the same labels (its pass size counts only the leaf layers that hold parameters).
    timm = pytest.importorskip("timm")
    torchinfo = pytest.importorskip("torchinfo")
    model = timm.create_model(name, pretrained=False).eval()
    x = torch.randn(1, 3, 224, 224)
    theirs = torchinfo.summary(model, input_data=x, verbose=0)
    s = summarize(tx.walk(model), tx.probe(model, x), depth=1)
    t = s.totals
    assert t.pass_bytes == theirs.total_output_bytes
    their_total = theirs.total_input + theirs.total_output_bytes + theirs.total_param_bytes
    # The total differs by the buffers, which torchinfo leaves out, and by parameters it leaves
    # out of its params size (timm's BatchNormAct2d holds children, so it is no leaf there).
    assert t.param_bytes == sum(p.numel() * p.element_size() for p in model.parameters())
    assert abs(t.total_bytes - their_total) / their_total < 0.01
    assert "torchinfo's estimate" in s.text()
