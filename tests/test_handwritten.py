"""A sample of the hand-written zoo (``tests/handwritten``, issue 58 item 4) through every check of
the sweep's "handwritten" family (`bench.sweep.checks` and `bench.sweep.handwritten`): walk, fake
and real probes with the bare forward's shapes, memory, diff, summary, the form of every class
(none silent, none raising), one edit then a real probe, the anchor (every probe a bare forward
allows succeeds: fake, or real with the reason named), compile_check's verdict against
``torch._dynamo.explain``, and the model untouched after each, on a model never called before.

The sample is chosen for what broke first: a weight whose ``.data`` the forward replaces, a
transformers tower setting up hooks on its first call, data-dependent routing, a dict in and a
namedtuple out with a GRU dynamo cannot trace, a constructor drawing random numbers on the CPU,
modules passed to a constructor, a config dataclass. The whole zoo and the held-out set run by
hand: ``python -m bench.sweep --family handwritten`` / ``--family heldout``."""

from __future__ import annotations

import pytest

from bench.sweep.checks import CHECKS, run
from bench.sweep.families import entries
from tests.handwritten import CASES

SAMPLE = (
    "pixelcnn_masked",
    "llava_clip_tower",
    "moe_topk",
    "film_dict_namedtuple",
    "gcn_dense",
    "gru_seq2seq_attention",
    "mamba_selective_scan",
)
ENTRIES = {e.name: e for e in entries(["handwritten"])}


def test_the_zoo_is_big_enough_and_every_case_runs_the_family() -> None:
    assert len(CASES) >= 40
    assert set(ENTRIES) == set(CASES)
    assert all(e.fresh and e.edit is not None for e in ENTRIES.values())


@pytest.mark.slow
@pytest.mark.parametrize("name", SAMPLE)
def test_every_check_holds_on_the_sample(name: str) -> None:
    out = run(ENTRIES[name])
    assert out.status("bare") == "ok", out.checks["bare"][1]
    failed = {c: out.checks[c][1] for c in CHECKS if out.status(c) == "fail"}
    if out.status("anchor") == "ok":
        # Fake tensors cannot run the forward (a data-dependent op), said as such, and the real
        # probe ran: the anchor's rule holds.
        failed.pop("fake", None)
    assert not failed, "\n".join(f"{c}: {text}" for c, text in failed.items())
    for check in ("walk", "real", "summary", "forms", "edit", "anchor", "untouched"):
        assert out.status(check) == "ok", (check, out.checks.get(check))
    assert out.forms and all(r["status"] in ("exact", "refused") for r in out.forms)
