"""Which argument a failed build was of, where the constructor reads one in a way no value found
for it allows: what a refusal then names, in place of the bare error.

- ``c, h, w = obs_shape`` given no sequence ("cannot unpack"): the argument it unpacks;
- ``sum(field_dims)``, ``for n in sizes`` given None or a number ("is not iterable"): the
  argument it iterates;
- ``opts.n_chars`` given None or a plain value ("has no attribute 'n_chars'"): the argument it
  reads that field off;
- ``specs.items()``, ``Cls(**kw)`` given no dict ("has no attribute 'items'", "must be a
  mapping"): the argument it takes as a mapping;
- ``d // heads`` given 0 ("division by zero"): the number it divides by.

Read from ``Usage`` (``_forms/sources/usage.py``) and the value the failed build gave it: the
sentence says what kind of value the argument needs and that none was found on the module.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..sources.usage import Usage

__all__ = ["unfilled"]

_ATTRIBUTE = re.compile(r"object has no attribute '(\w+)'")
_SEQUENCES = (tuple, list, str)


def unfilled(error: str, uses: Mapping[str, Usage], values: Mapping[str, Any]) -> str:
    """``": {name} is ..."`` for the argument the failed build's ``error`` was of, or ""."""
    for name, u in uses.items():
        v = values.get(name)
        if "unpack" in error and u.unpacks and not isinstance(v, _SEQUENCES):
            return (
                f": {name} is unpacked into {u.unpacked} values, and no sequence of them that"
                " the module keeps was found"
            )
        mapping = "must be a mapping" in error or "attribute 'items'" in error
        if mapping and u.mapping and not isinstance(v, dict):
            return (
                f": {name} is read as a dict (its items, or handed on as keywords), and none"
                " could be read back off the layers it made"
            )
        if "not iterable" in error and u.sequence and not isinstance(v, _SEQUENCES):
            return (
                f": {name} is iterated (a list of sizes, summed or looped over), and no list"
                " that rebuilds the module was found"
            )
        if "division by zero" in error and u.number and type(v) in (int, float) and v == 0:
            return (
                f": {name} is divided by, and 0 (its default, or the value found) cannot be;"
                " no value that rebuilds the module was found"
            )
        m = _ATTRIBUTE.search(error)
        if m and m.group(1) in u.fields and not hasattr(v, m.group(1)):
            return (
                f": {name} is read as an object with a field {m.group(1)!r} (an options or"
                " config object), and none could be read back off the module"
            )
    return ""
