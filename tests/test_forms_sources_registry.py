"""The sources' registry (stage 2, ``_forms/sources/__init__.py``): each draft value comes from the
first source of ``SOURCES`` that reads it, in the order the registry gives with its reasons;
every source file is named where a newcomer looks for it and has tests of its own
(tests/test_forms_sources_<source>.py)."""

from __future__ import annotations

import inspect
import pkgutil
from pathlib import Path

from torch import nn

import torchxray as tx
from torchxray._forms import sources
from torchxray._forms.signature import constructor

TESTS = Path(__file__).parent
# Files that are not sources of their own: the order of the candidates, and readers a source
# file names (the children's structure reads layouts, scans, positions, installed libraries).
_HELPERS = {
    "pools", "layout", "scan", "installed", "literals", "position", "children", "uses",
    "expressions",  # the sums, products and floored expressions read once: tested with those
    "handed_kind",  # usage.py's reading of the blocks an argument is handed to: tested with it
}  # fmt: skip


def test_the_draft_sources_stand_in_their_order_each_with_why() -> None:
    names = [s.name for s in sources.SOURCES]
    assert names == ["recorded", "recoverers", "spread", "arrays", "attributes", "defaults"]
    assert all(s.why for s in sources.SOURCES)


def test_every_source_file_is_named_in_the_registry_and_has_tests() -> None:
    doc = inspect.getdoc(sources) or ""
    pools = inspect.getdoc(sources.pools) or ""
    for m in pkgutil.iter_modules(sources.__path__):
        module = __import__(f"torchxray._forms.sources.{m.name}", fromlist=["_"])
        assert inspect.getdoc(module), m.name
        assert f"{m.name}.py" in doc + pools, f"{m.name}.py is not named in the registry"
        if m.name not in _HELPERS:
            assert (TESTS / f"test_forms_sources_{m.name}.py").is_file(), m.name


def test_the_first_source_that_reads_a_value_gives_it_and_its_origin() -> None:
    class Keeps(nn.Module):
        def __init__(self, width: int, scale: float = 1.0, *args: int) -> None:
            super().__init__()
            self.width = width  # an attribute: read as it is
            self.proj = nn.Linear(width, width)

    d = sources.draft(constructor(Keeps(8)))
    origins = {f.name: (f.value, f.origin) for f in d.fields}
    assert origins == {
        "width": (8, "attribute"),
        "scale": (1.0, "default"),
        "args": ((), "default"),
    }
    assert not d.recorded and sources.searched(d)
    with tx.record_init_args():
        kept = Keeps(8, 2.0)
    d = sources.draft(constructor(kept))
    assert {f.name: f.origin for f in d.fields} == dict.fromkeys(origins, "recorded")
    assert d.recorded and not sources.searched(d)
