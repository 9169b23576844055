"""The expressions of several arguments a constructor hands its layers as widths, read once for
all its parameters: linear sums (``sums.py``), products (``products.py``) and expressions through
floor divisions (``floored.py``). ``usage.py`` gives each parameter those it appears in."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .code import code_of, param_names
from .floored import floored
from .products import products
from .sums import sums

__all__ = ["handed_expressions"]


@functools.lru_cache(maxsize=512)
def handed_expressions(init: Callable[..., Any]) -> tuple[Any, ...]:
    """The sums, products and floored expressions ``init`` hands its layers."""
    code = code_of(init)
    if code is None:
        return ()
    params = frozenset(param_names(init)[1:])  # not self
    return (*sums(params, code), *products(params, code), *floored(params, code))
