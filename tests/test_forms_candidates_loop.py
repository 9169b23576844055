"""The search's loop (stage 3, ``_forms/candidates/loop.py``): the best of a few better steps, a look
past a proposal that scores no better, whatever the builds cost; on real library classes (random
init, nothing downloaded)."""

from __future__ import annotations

import functools
import importlib
import warnings

import pytest
from fixtures.forms import exact

warnings.filterwarnings("ignore")
pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_keyword_dicts_and_a_move_past_a_no_better_proposal() -> None:
    # kernel_size 3 alone scores no better (padding then differs); with padding=0 on top it is
    # exact; the norm's eps came in a keyword dict (norm_kwargs).
    timm = pytest.importorskip("timm")
    conv = timm.layers.ConvNormAct(
        3, 32, kernel_size=3, stride=2, padding=0, norm_kwargs={"eps": 1e-3}
    )
    f = exact(conv)
    assert f["norm_kwargs"].value == {"eps": 1e-3}
    block = functools.partial(timm.layers.ConvNormAct, padding=0, norm_kwargs={"eps": 1e-3})
    exact(importlib.import_module("timm.models.inception_v4").Mixed3a(conv_block=block))


def test_a_search_with_no_wider_one_to_follow_looks_past_a_flat_step_however_slow_its_builds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A loaded machine makes every build slower: the look past a no-better proposal must not
    # depend on how much of the budget the builds before it took.
    densenet = pytest.importorskip("torchvision.models.densenet")
    import contextlib
    import time

    from torchxray._forms.rebuild import real as rebuild

    real = rebuild.meta_build

    @contextlib.contextmanager
    def slow(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        end = time.thread_time() + 0.04
        while time.thread_time() < end:
            pass
        with real(*args, **kwargs) as state:  # type: ignore[arg-type]
            yield state

    monkeypatch.setattr(rebuild, "meta_build", slow)
    block = densenet._DenseBlock(6, 64, 4, 32, 0.0)
    f = exact(block)
    assert (f["num_input_features"].value, f["growth_rate"].value) == (64, 32)


def test_the_best_of_a_few_better_steps_is_taken() -> None:
    mobilevit = pytest.importorskip("timm.models.mobilevit")
    # conv_1x1 is 128 -> 64: in_chs 64 scores better first, and is a step away; a ratio or a
    # width derived from in_chs moving instead is exact.
    block = mobilevit.MobileVitV2Block(128, 128, transformer_dim=64, patch_size=2)
    assert exact(block)["in_chs"].value == 128


def _search(scores: dict[tuple[int, int, int], int]) -> object:
    """A search over fields a, b, c (each 0 or 1) whose builds score as ``scores`` says."""
    from types import SimpleNamespace

    from torchxray._forms.candidates.loop import Search, Try

    s = object.__new__(Search)
    s.values = {"a": 0, "b": 0, "c": 0}
    s.by_name = dict.fromkeys(s.values)  # type: ignore[assignment]
    s.seen, s.done = set(), {}
    s.budget = SimpleNamespace(out=False)  # type: ignore[assignment]
    s.build = lambda v: Try(scores[v["a"], v["b"], v["c"]])  # type: ignore[method-assign]
    return s


def test_changes_of_other_fields_whose_gains_add_up_are_taken_together() -> None:
    # a explains one part (a table's rows), b a hundred (a stack's depth): both at once.
    from torchxray._forms.candidates.loop import Try

    s = _search({(1, 1, 0): 0})
    best, one, two = Try(101), Try(100), Try(1)
    step = s._together(best, ({"b": 1}, two), [({"a": 1}, one), ({"b": 1}, two)])  # type: ignore[attr-defined]
    assert step[0] == {"a": 1, "b": 1} and step[1].score == 0


def test_changes_whose_gains_do_not_add_up_are_taken_one_at_a_time() -> None:
    # Two fields of one product (heads, their width): together they score better than either,
    # but not as their gains add up; the step alone is taken.
    from torchxray._forms.candidates.loop import Try

    s = _search({(1, 1, 0): 40})
    best, one, two = Try(136), Try(70), Try(118)
    step = s._together(best, ({"a": 1}, one), [({"a": 1}, one), ({"b": 1}, two)])  # type: ignore[attr-defined]
    assert step[0] == {"a": 1}


def test_changes_that_are_exact_together_are_taken_however_their_gains_add() -> None:
    # A factory for the backbone and the projection's width: each alone leaves the other's
    # parts, together nothing (ContrastiveAudio of the zoo).
    from torchxray._forms.candidates.loop import Try

    s = _search({(1, 1, 0): 0})
    best, one, two = Try(34), Try(4), Try(31)
    step = s._together(best, ({"a": 1}, one), [({"a": 1}, one), ({"b": 1}, two)])  # type: ignore[attr-defined]
    assert step[0] == {"a": 1, "b": 1} and step[1].score == 0


def test_a_union_not_taken_may_be_proposed_again() -> None:
    from torchxray._forms.candidates.loop import Try

    s = _search({(1, 1, 0): 40})
    s._together(Try(136), ({"a": 1}, Try(70)), [({"a": 1}, Try(70)), ({"b": 1}, Try(118))])  # type: ignore[attr-defined]
    assert not s.tried({"a": 1, "b": 1})  # type: ignore[attr-defined]
