"""Every name in `torchxray.__all__` is documented as the API reference shows it (docs/api, built
from the docstrings by docs/_hooks/api_pages.py): a function says its parameters, what it returns
and gives an example; a class says its fields or arguments and gives an example; every public
method and property a class defines has a docstring. The examples run in
`pytest --doctest-modules src/torchxray`.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import torchxray as tx

# The forms' public names, whose module is being rewritten (its docstrings come with the new
# code): remove a name here once its docstring has its sections.
PENDING: set[str] = set()
NAMES = [n for n in tx.__all__ if n != "__version__"]


def _sections(obj: Any) -> list[str]:
    doc = inspect.getdoc(obj) or ""
    missing = [] if ">>>" in doc and "Examples:" in doc else ["Examples"]
    if inspect.isclass(obj):
        if "Attributes:" not in doc and "Args:" not in doc:
            missing.append("Attributes or Args")
        return missing
    signature = inspect.signature(obj)
    if signature.parameters and "Args:" not in doc:
        missing.append("Args")
    returns = signature.return_annotation
    if returns not in (None, "None", inspect.Signature.empty) and "Returns:" not in doc:
        missing.append("Returns")
    return missing


def _undocumented_members(cls: type) -> list[str]:
    """The public methods and properties `cls` and its torchxray bases define without a docstring."""
    missing = []
    for owner in cls.__mro__:
        if not owner.__module__.startswith("torchxray"):
            continue
        for name, raw in vars(owner).items():
            if name.startswith("_"):
                continue
            fn = raw.fget if isinstance(raw, property) else getattr(raw, "__func__", raw)
            if inspect.isfunction(fn) and not (fn.__doc__ or "").strip():
                missing.append(f"{owner.__name__}.{name}")
    return missing


@pytest.mark.parametrize("name", [n for n in NAMES if n not in PENDING])
def test_a_public_name_has_its_sections(name: str) -> None:
    obj = getattr(tx, name)
    missing = _sections(obj)
    if inspect.isclass(obj):
        missing += _undocumented_members(obj)
    assert not missing, f"tx.{name}'s docstring lacks: {', '.join(missing)}"


def test_the_pending_names_are_still_public() -> None:
    # A stale entry would let a public name go undocumented without anyone noticing.
    assert PENDING <= set(tx.__all__), sorted(PENDING - set(tx.__all__))
