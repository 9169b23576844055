"""The Explorer driven as its frontend drives it (the ``rpc`` command and anywidget's command
envelope), without a browser; plus the Python mirror (select/edit/undo/close) and the traitlets."""

from __future__ import annotations

import gc
import json
import re
import weakref
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn as nn
from fixtures.models import repeated_blocks, script_module, shared_module, tiny_cnn, tiny_mlp
from traitlets import TraitError

from torchxray._view import assets, serialize
from torchxray._view.assets import STATIC
from torchxray.widget import Explorer, explore


@pytest.fixture(autouse=True)
def _stub_bundle(monkeypatch: pytest.MonkeyPatch) -> None:
    # The kernel side does not need the built frontend; test_bundle_* check the real one.
    monkeypatch.setattr(assets, "bundle", lambda: ("export default {}", ""))
    monkeypatch.delattr(Explorer, "_esm", raising=False)


def call(ex: Explorer, **msg: Any) -> dict[str, Any]:
    reply, buffers = ex.rpc(msg, [])
    assert buffers == []
    json.dumps(reply)  # every reply must be plain JSON
    return reply


def cnn() -> tuple[Explorer, nn.Module]:
    model = tiny_cnn()
    return explore(model, torch.randn(2, 3, 8, 8)), model


# -- first state --------------------------------------------------------------------------------


def test_first_state_and_probe_status() -> None:
    ex, _ = cnn()
    assert ex.tree_state["root"]["cls"] == "TinyCNN"
    assert [r["name"] for r in ex.tree_state["pages"][""]["items"]] == ["features", "pool", "head"]
    head = ex.tree_state["pages"][""]["items"][2]
    assert head["out"] == "2×10" and head["params"] == 8 * 10 + 10
    assert "custom" in ex.tree_state["root"]["marks"]
    assert ex.probe_summary["ok"] is True and ex.probe_summary["status"] == "probe ok: 8 modules"
    assert ex.overview["cls"] == "TinyCNN" and ex.busy == "" and ex.error == ""
    json.dumps(ex.get_state())


def test_without_example_inputs_there_is_no_probe_but_the_tree_works() -> None:
    ex = explore(tiny_mlp())
    assert ex.probe_summary["ok"] is None and "pass example inputs" in ex.probe_summary["status"]
    assert ex.probe_report is None
    assert call(ex, kind="probe_table")["kind"] == "error"
    assert call(ex, kind="children", path="")["total"] == 3


def test_first_state_of_a_large_model_is_small() -> None:
    # 10,000 distinct-signature modules in 100 blocks; the first state is a bounded number of rows.
    blocks = [nn.Sequential(*[nn.Linear(1, (i % 5) + 1) for _ in range(99)]) for i in range(101)]
    ex = explore(nn.Sequential(*blocks))
    size = len(json.dumps(ex.tree_state))
    assert size < 256 * 1024
    rows = sum(len(p["items"]) for p in ex.tree_state["pages"].values())
    assert rows <= serialize.FIRST_ROWS + serialize.PAGE


# -- tree pages, folds, filter, reveal ------------------------------------------------------


def test_identical_siblings_are_folded_and_unfold_in_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    ex = explore(repeated_blocks(7), torch.randn(2, 8))
    page = call(ex, kind="children", path="layers")
    [fold] = page["items"]
    assert fold == {
        "fold": 7,
        "parent": "layers",
        "start": 0,
        "cls": "DecoderLayer",
        "first": "layers.0",
        "last": "layers.6",
    }
    root_items = call(ex, kind="children", path="")["items"]
    assert [it.get("name") for it in root_items] == ["embed", "layers", "final"]  # final differs
    monkeypatch.setattr(serialize, "PAGE", 3)
    got = call(ex, kind="children", path="layers", offset=0, limit=7, unfold=True)
    assert [it["path"] for it in got["items"][:3]] == ["layers.0", "layers.1", "layers.2"]
    assert got["items"][3] == {"more": 4, "parent": "layers", "offset": 3, "unfold": True}
    rest = call(ex, kind="children", path="layers", offset=3, limit=4, unfold=True)
    assert [it["path"] for it in rest["items"][:3]] == ["layers.3", "layers.4", "layers.5"]
    assert rest["items"][-1]["more"] == 1


def test_long_child_lists_are_paged(monkeypatch: pytest.MonkeyPatch) -> None:
    model = nn.Sequential(*[nn.Linear(2, i + 1) for i in range(10)])
    ex = explore(model)
    monkeypatch.setattr(serialize, "PAGE", 4)
    got = call(ex, kind="children", path="")
    assert len(got["items"]) == 5 and got["items"][-1] == {
        "more": 6,
        "parent": "",
        "offset": 4,
        "unfold": False,
    }


def test_filter_substring_regex_and_bad_regex() -> None:
    ex, _ = cnn()
    got = call(ex, kind="filter", query="conv")
    assert got["count"] == 1
    assert [(r["path"], r["match"]) for r in got["rows"]] == [
        ("", False),
        ("features", False),
        ("features.0", True),
    ]
    assert call(ex, kind="filter", query=r"^features\.\d$", regex=True)["count"] == 4
    bad = call(ex, kind="filter", query="(", regex=True)
    assert bad["kind"] == "error" and "bad regular expression" in bad["message"]


def test_reveal_gives_the_chain_of_parents() -> None:
    ex = explore(repeated_blocks(3))
    got = call(ex, kind="reveal", path="layers.2.mlp.0")
    assert got["chain"] == [
        {"parent": "", "index": 1},
        {"parent": "layers", "index": 2},
        {"parent": "layers.2", "index": 3},
        {"parent": "layers.2.mlp", "index": 0},
    ]


# -- selection, both ways -------------------------------------------------------------------


def test_select_from_the_view_and_from_python() -> None:
    ex, _ = cnn()
    assert call(ex, kind="select", path="features.1") == {"kind": "select", "path": "features.1"}
    assert ex.selected == "features.1" and ex.overview["cls"] == "BatchNorm2d"
    assert ex.overview["probe"]["outputs"].startswith("2×8×8×8")
    assert ex.select("head") == "head"
    assert ex.selected == "head" and ex.overview["qualname"] == "torch.nn.modules.linear.Linear"


def test_an_alias_path_selects_the_canonical_node() -> None:
    ex = explore(shared_module())
    node_paths = {r["path"] for r in call(ex, kind="filter", query="")["rows"]}
    for path in node_paths:
        assert call(ex, kind="select", path=path)["path"] == path


def test_an_alias_child_is_its_own_row_not_a_copy_of_the_canonical_one() -> None:
    lin = nn.Linear(2, 2)
    ex = explore(nn.Sequential(lin, lin, nn.ReLU(), nn.Linear(2, 3)))
    items = call(ex, kind="children", path="")["items"]
    # Each path once, in order (the view keys rows by path: a duplicate "0" collided there).
    assert [(r["path"], r["name"]) for r in items] == [
        ("0", "0"),
        ("1", "1"),
        ("2", "2"),
        ("3", "3"),
    ]
    assert "alias_of" not in items[0] and items[1]["alias_of"] == "0"
    assert "alias" in items[0]["marks"] and "alias" in items[1]["marks"]
    assert call(ex, kind="select", path="1")["path"] == "0"
    ex.save_snapshot()
    raw = ex.snapshot["children"][""]["raw"]
    assert [r["path"] for r in raw] == ["0", "1", "2", "3"]

    # A fold of aliases names its own paths, not the canonical one elsewhere in the model.
    outer = nn.Module()
    outer.x = lin
    outer.seq = nn.Sequential(lin, lin, lin)
    (fold,) = call(explore(outer), kind="children", path="seq")["items"]
    assert (fold["fold"], fold["first"], fold["last"]) == (3, "seq.0", "seq.2")


# -- edit, probe, undo ------------------------------------------------------------------------


def test_edit_from_the_view_breaks_the_probe_then_undo_restores() -> None:
    ex, model = cnn()
    conv = model.features[0]
    form = call(ex, kind="form", path="features.0")
    assert form["cls"] == "Conv2d"
    assert {f["name"]: f["text"] for f in form["fields"]}["out_channels"] == "8"
    busy: list[str] = []
    ex.observe(lambda c: busy.append(c["new"]), names="busy")
    got = call(ex, kind="edit", path="features.0", changes={"out_channels": "16"}, rev=form["rev"])
    assert got["kind"] == "patched"
    assert busy == ["edit", ""]
    assert model.features[0] is not conv and model.features[0].out_channels == 16  # the live model
    assert ex.probe_summary["ok"] is False
    assert ex.probe_summary["status"].startswith("probe failed at features.1: ")
    assert ex.probe_summary["error"]["path"] == "features.1"
    rows = {r["path"]: r for r in ex.tree_state["pages"]["features"]["items"]}
    assert "patched" in rows["features.0"]["marks"] and "error" in rows["features.1"]["marks"]
    assert ex.history["can_undo"] and ex.history["entries"][0]["op"] == "edit"
    assert "out_channels" in ex.history["entries"][0]["changes"]
    assert call(ex, kind="undo")["kind"] == "patched"
    assert model.features[0] is conv
    assert ex.probe_summary["ok"] is True and ex.history["can_redo"] and not ex.history["can_undo"]
    assert call(ex, kind="redo")["kind"] == "patched" and model.features[0].out_channels == 16


def test_bad_field_values_are_answered_per_field_and_change_nothing() -> None:
    ex, model = cnn()
    conv = model.features[0]
    got = call(ex, kind="edit", path="features.0", changes={"out_channels": "-3", "stride": "x"})
    assert got["kind"] == "error"
    assert set(got["fields"]) == {"out_channels", "stride"}
    assert model.features[0] is conv and ex.history["entries"] == [] and ex.busy == ""
    assert ex.error  # shown in the view as well
    unknown = call(ex, kind="edit", path="features.0", changes={"out_chanels": "3"})
    assert "out_channels" in unknown["fields"]["out_chanels"]
    assert call(ex, kind="edit", path="features.0", changes={})["kind"] == "error"


def test_stale_revisions_and_unknown_paths_are_refused() -> None:
    ex, model = cnn()
    rev = call(ex, kind="form", path="head")["rev"]
    ex.edit("head", out_features=4)  # the model changes from Python meanwhile
    stale = call(ex, kind="edit", path="head", changes={"out_features": "5"}, rev=rev)
    assert stale["kind"] == "error" and "stale" in stale["message"]
    assert model.head.out_features == 4
    for kind in ("select", "children", "source", "form", "mro", "reveal"):
        got = call(ex, kind=kind, path="no.such.module")
        assert got["kind"] == "error" and "no.such.module" in got["message"], kind


def test_nothing_to_undo_is_an_error_reply() -> None:
    ex, _ = cnn()
    got = call(ex, kind="undo")
    assert got["kind"] == "error" and "nothing to undo" in got["message"] and ex.busy == ""


def test_a_kernel_interrupt_during_a_probe_is_answered_not_left_pending(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torchxray._view.session as session_mod

    ex, model = cnn()

    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(session_mod, "probe", interrupted)
    got = call(ex, kind="edit", path="head", changes={"out_features": "3"})
    assert got == {"kind": "error", "message": "edit: interrupted", "request": "edit"}
    assert ex.busy == "" and model.head.out_features == 3  # the patch stands
    assert ex.probe_summary["ok"] is None and "probe interrupted" in ex.probe_summary["status"]
    assert ex.history["can_undo"] and ex.tree_state["pages"][""]["items"][2]["params"] == 8 * 3 + 3
    assert call(ex, kind="probe")["kind"] == "error"  # still interrupted: an error, not a raise


def test_real_probe_mode_from_the_view() -> None:
    ex, _ = cnn()
    got = call(ex, kind="probe", mode="real")
    assert got["mode"] == "real" and ex.probe_mode == "real"
    table = call(ex, kind="probe_table", offset=0, limit=3)
    assert table["total"] == 8 and len(table["rows"]) == 3
    assert all(r["time_ms"] is not None for r in table["rows"])


# -- replace with a catalog class -------------------------------------------------------------


def test_replace_with_a_catalog_class_prefilled_from_the_old_module() -> None:
    ex, model = cnn()
    entries = call(ex, kind="catalog", query="InstanceNorm2d", path="features.1")["entries"]
    assert entries[0]["name"] == "InstanceNorm2d"
    form = call(ex, kind="form", cls=entries[0]["qualname"], prefill="features.1")
    fields = {f["name"]: f for f in form["fields"]}
    assert fields["num_features"]["text"] == "8" and fields["num_features"]["origin"] == "prefilled"
    changes = {"num_features": "8", "affine": "True"}
    got = call(ex, kind="replace", path="features.1", cls=form["qualname"], changes=changes)
    assert got["kind"] == "patched"
    assert type(model.features[1]).__name__ == "InstanceNorm2d" and model.features[1].affine
    assert ex.probe_summary["ok"] is True
    table = call(ex, kind="probe_table")
    rows = {r["path"]: r for r in table["rows"]}
    # Same shapes, but a new class is still a change to show: the row says what it was.
    assert rows["features.1"]["status"] == "changed"
    assert rows["features.1"]["before"] == "2×8×8×8 (was BatchNorm2d)"
    assert rows["features.0"]["status"] == "same" and rows["features.0"]["before"] is None
    assert ex.probe_summary["changed"] == 1
    assert "InstanceNorm2d" in ex.to_code()


def test_replace_with_bad_arguments_reports_the_field() -> None:
    ex, model = cnn()
    old = model.head
    got = call(ex, kind="replace", path="head", cls="torch.nn.Linear", changes={"in_features": "a"})
    assert got["kind"] == "error" and "in_features" in got["fields"]
    missing = call(ex, kind="replace", path="head", cls="torch.nn.NoSuchLayer")
    assert missing["kind"] == "error" and "NoSuchLayer" in missing["message"]
    assert model.head is old


def test_a_message_cannot_make_the_kernel_import_a_new_package() -> None:
    import sys

    ex, model = cnn()
    assert "antigravity" not in sys.modules  # importing it would open a web browser
    for msg in (
        {"kind": "form", "cls": "antigravity.Anything", "prefill": "head"},
        {"kind": "replace", "path": "head", "cls": "antigravity.Anything"},
    ):
        got = call(ex, **msg)
        assert got["kind"] == "error" and "'antigravity' is not imported" in got["message"]
    assert "antigravity" not in sys.modules and type(model.head) is nn.Linear
    # Classes of imported packages (what the catalog offers) still resolve.
    assert call(ex, kind="form", cls="torch.nn.Identity")["cls"] == "Identity"


def test_probe_diff_marks_changed_modules() -> None:
    ex, _ = cnn()
    call(ex, kind="edit", path="head", changes={"out_features": "3"})
    assert ex.probe_summary["changed"] >= 1
    rows = {r["path"]: r for r in call(ex, kind="probe_table")["rows"]}
    # "before" is written like the "output" column (shapes only), so the two compare at a glance.
    assert rows["head"]["status"] == "changed" and rows["head"]["before"] == "2×10"
    assert rows["head"]["outputs"] == "2×3"


def test_modules_a_failed_probe_did_not_reach_are_not_called_removed() -> None:
    ex, _ = cnn()
    call(ex, kind="edit", path="features.0", changes={"out_channels": "4"})
    assert ex.probe_summary["ok"] is False and ex.probe_summary["error"]["path"] == "features.1"
    table = call(ex, kind="probe_table")
    assert table["removed"] == []
    assert table["not_reached"] == ["features.2", "features.3", "pool", "head"]
    # Only what ran and differs counts (root, features, features.0, the failed features.1), not
    # the four modules after the failure.
    assert ex.probe_summary["changed"] == 4
    call(ex, kind="undo")
    table = call(ex, kind="probe_table")
    assert table["not_reached"] == [] and table["removed"] == []
    # Undone back to the model that last passed: compared with that run, nothing is new.
    assert {r["status"] for r in table["rows"]} == {"same"} and ex.probe_summary["changed"] == 0


def test_styles_follow_the_theme_in_dark_mode() -> None:
    css = (Path(__file__).parents[1] / "js" / "styles.css").read_text()
    # JupyterLab's dark theme keeps --jp-*-color3 light: rows tinted with them were unreadable.
    assert not re.search(r"--jp-(warn|error|success)-color3", css)
    for var in ("--tx-changed", "--tx-added", "--tx-badbg"):
        assert re.search(rf"{var}: color-mix\(in srgb, var\(--tx-\w+\) \d+%, transparent\)", css)
    # Graphviz's white page behind the MRO graph is cleared; the nodes keep their own fills.
    assert '.tx-graph svg g.graph > g[id^="a_graph"] polygon { fill: transparent; }' in css
    assert "background: #fff" not in css


# -- panes: source, mro, asset ----------------------------------------------------------------


def test_source_and_mro_panes() -> None:
    ex, _ = cnn()
    src = call(ex, kind="source", path="features.0")
    assert src["qualname"].endswith("Conv2d") and src["file"].endswith("conv.py")
    assert "hll" in src["html"] and src["forward_lines"][0] > src["line"]
    mro = call(ex, kind="mro", path="features.0")
    names = [c["name"] for c in mro["classes"]]
    assert names[:2] == ["Conv2d", "_ConvNd"] and names[-1] == "object"
    assert all(f"{c['node']} [" in mro["dot"] for c in mro["classes"])
    base = call(ex, kind="source", path="features.0", cls=mro["classes"][1]["qualname"])
    assert base["qualname"].endswith("_ConvNd")
    builtin = call(ex, kind="source", path="features.0", cls=mro["classes"][-1]["qualname"])
    assert builtin["html"] is None and builtin["reason"]


def test_asset_request() -> None:
    ex, _ = cnn()
    got = call(ex, kind="asset", name="viz")
    if (STATIC / "viz.js").exists():
        assert got["kind"] == "asset" and "renderSVGElement" in got["code"]
    else:
        assert got["kind"] == "error" and "make js" in got["message"]


# -- malformed traffic ----------------------------------------------------------------------


def test_the_command_envelope_is_guarded(monkeypatch: pytest.MonkeyPatch) -> None:
    ex, model = cnn()
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(ex, "send", lambda content, buffers=None: sent.append(content))

    def state() -> str:  # all but "error", which shows the last refused action
        return json.dumps({k: v for k, v in ex.get_state().items() if k != "error"}, sort_keys=True)

    before = state()
    envelope = {"kind": "anywidget-command", "id": "1", "name": "rpc"}
    ex._handle_custom_msg({**envelope, "msg": {"kind": "select", "path": 7}}, [])
    ex._handle_custom_msg({**envelope, "id": "2", "msg": "not a dict"}, [])
    ex._handle_custom_msg({**envelope, "id": "3", "name": "drop_model", "msg": {}}, [])
    ex._handle_custom_msg({"kind": "anywidget-command", "name": "rpc", "msg": {}}, [])  # no id
    ex._handle_custom_msg({"kind": "anywidget-command"}, [])
    ex._handle_custom_msg({"unrelated": True}, [])
    ex._handle_custom_msg({**envelope, "id": "4", "msg": {"kind": "edit", "path": "head"}}, [])
    assert [m["id"] for m in sent] == ["1", "2", "3", "4"]
    assert all(m["kind"] == "anywidget-command-response" for m in sent)
    assert all(m["response"]["kind"] == "error" for m in sent)
    assert "must be a string" in sent[0]["response"]["message"]
    assert "unknown command 'drop_model'" in sent[2]["response"]["message"]
    assert state() == before
    assert ex.history["entries"] == [] and isinstance(model.head, nn.Linear)


def test_a_model_whose_forward_raises_still_opens() -> None:
    class Broken(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = nn.Linear(5, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.b(self.a(x))

    ex = explore(Broken(), torch.randn(1, 4))
    assert ex.probe_summary["ok"] is False and ex.probe_summary["status"].startswith(
        "probe failed at b: "
    )
    assert ex.tree_state["root"]["cls"] == "Broken"


# -- the Python mirror ------------------------------------------------------------------------


def test_python_changes_show_in_the_traitlets() -> None:
    ex, model = cnn()
    ex.select("head")
    entry = ex.edit(out_features=3)  # the selected module by default
    assert entry.op == "edit" and model.head.out_features == 3
    assert ex.tree_state["pages"][""]["items"][2]["out"] == "2×3"
    assert ex.overview["probe"]["outputs"].startswith("2×3")
    assert [e.id for e in ex.patches] == [entry.id] and "out_features=3" in ex.to_code()
    ex.undo()
    assert model.head.out_features == 10 and ex.history["can_redo"]
    ex.redo()
    new = nn.Linear(8, 5)
    ex.replace("head", new)
    assert model.head is new and ex.probe_summary["status"] == "probe ok: 8 modules"
    ex.replace_all(nn.ReLU, lambda old: nn.GELU())
    assert isinstance(model.features[2], nn.GELU)
    assert ex.run_probe("real") is ex.probe_report and ex.probe_report.mode == "real"
    with pytest.raises(KeyError):
        ex.select("nope")


def test_close_releases_the_model() -> None:
    ex, model = cnn()
    ex.edit("head", out_features=3)
    ref = weakref.ref(model)
    del model
    ex.close()
    gc.collect()
    assert ref() is None
    got, _ = ex.rpc({"kind": "select", "path": "head"}, [])
    assert got["kind"] == "error" and "closed" in got["message"]
    with pytest.raises(RuntimeError, match="closed"):
        ex.undo()


def test_explore_refuses_a_non_module() -> None:
    with pytest.raises(TypeError, match="needs a torch.nn.Module"):
        explore(lambda x: x)


# -- the built frontend ---------------------------------------------------------------------


def test_missing_bundle_says_how_to_build_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.undo()
    monkeypatch.setattr(assets, "STATIC", tmp_path)
    monkeypatch.delattr(Explorer, "_esm", raising=False)
    with pytest.raises(FileNotFoundError, match="make js"):
        explore(tiny_mlp())


def test_bundle_size() -> None:
    js = STATIC / "widget.js"
    if not js.exists():
        pytest.skip("frontend not built: run `make js`")
    assert js.stat().st_size <= 150 * 1024
    assert "innerHTML" in js.read_text()  # only for Pygments output; see js/panes/source.ts


# -- read-only snapshots ----------------------------------------------------------------------


def _inlined(page: str, element: str) -> str:
    start = page.index(">", page.index(f'id="{element}"')) + 1
    return assets.unpacked(page[start : page.index("</script>", start)]).decode()


def test_to_html_inlines_the_state_read_only(tmp_path: Any) -> None:
    model = tiny_cnn()
    model.add_module("<img src=x onerror=alert(1)>", nn.ReLU())
    ex = explore(model, torch.randn(2, 3, 8, 8))
    out = tmp_path / "snap.html"
    assert ex.to_html(out) == out  # a cell ending in it shows the path, not the page
    page = out.read_text(encoding="utf-8")
    assert ex.to_html() == page
    assert "<img src=x" not in page  # model strings only travel inside base64 blocks
    state = json.loads(_inlined(page, "tx-state"))
    assert state["readonly"] is True and state["tree_state"]["root"]["cls"] == "TinyCNN"
    snap = state["snapshot"]
    assert [n["path"] for n in snap["nodes"]][:3] == ["", "features", "features.0"]
    assert snap["children"]["features"]["raw"][1]["cls"] == "BatchNorm2d"
    key = snap["cls_of"]["features.0"]
    assert snap["source"][key]["qualname"].endswith("Conv2d") and "dot" in snap["mro"][key]
    assert snap["form"]["head"]["cls"] == "Linear"
    assert snap["probe_table"]["total"] == 8  # the added ReLU is not called by forward
    assert _inlined(page, "tx-bundle") == "export default {}"  # the (stubbed) bundle
    # A dark system theme darkens the page around the (self-theming) widget too.
    assert "@media (prefers-color-scheme: dark) { body { background: #0d1117; } }" in page


def test_save_snapshot_fills_the_widget_state() -> None:
    ex, _ = cnn()
    assert ex.snapshot == {}
    ex.save_snapshot()
    assert ex.snapshot["overview"]["head"]["cls"] == "Linear" and not ex.snapshot["truncated"]


def test_a_model_that_cannot_be_patched_can_still_be_explored() -> None:
    ex = explore(script_module())
    assert ex.tree_state["root"]["nkids"] == 3 and ex.patches == () and ex.to_code() == ""
    assert "TorchScript" in ex.history["note"]
    got = call(ex, kind="edit", path="0", changes={"out_features": "3"})
    assert got["kind"] == "error" and "ScriptModule" in got["message"]
    with pytest.raises(TypeError, match="TorchScript"):
        ex.undo()


def test_the_probe_mode_chosen_in_the_view_is_used_after_a_patch() -> None:
    ex, _ = cnn()
    ex.probe_mode = "real"  # as the view's mode selector sets it
    call(ex, kind="edit", path="head", changes={"out_features": "4"})
    assert ex.probe_report is not None and ex.probe_report.mode == "real"
    assert ex.probe_summary["mode"] == "real"
    # Not a mode: refused with the allowed values, from Python and from the view alike.
    with pytest.raises(TraitError, match=r"probe_mode.*\['fake', 'real'\].*'turbo'"):
        ex.probe_mode = "turbo"
    with pytest.raises(TraitError, match="'turbo'"):
        ex.set_state({"probe_mode": "turbo"})
    assert ex.probe_mode == "real"
    assert ex.run_probe() is not None and ex.probe_report.mode == "real"
