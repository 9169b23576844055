"""Values the gate cannot tell apart (``settle``): a field whose other values rebuild the module
just as exactly holds no proven value.

The search (``candidates/loop.py``) stops at the first exact build, and on the way it may have moved
a field that no part depends on in this module (efficientnet's ``noskip``: a block of stride 2
has no skip either way; shown True where timm passed False). The rebuild is the same today, and
not after an edit to stride 1: a value the gate did not prove must not be shown as proven.

The rule, for every field the search moved from its draft value (the default, or what an
attribute held): build again with the draft value back; when that build is exact too, the field
is ambiguous, keeps its draft value (what the caller most likely passed: the default) and its
draft origin (a guess the view flags), and the form says so in its note
(``_forms/exact/``); a required field, with no
default to prefer, keeps the value found, as a guess (origin "default"). One field at a time, each on top
of those already settled: two fields that are only exact together are left as found.

Two rivals the draft value does not show: a float the module shows only through a whole number
it makes (``int(d * factor)``: every factor in a small interval makes the same width) is tried a
hair above and below (``_FLOAT_STEP``); and two whole numbers a layer sees only as their sum
(``nn.Linear(2 * enc + dec, n)``, ``sums``: ``_forms/sources/sums.py``) are tried moved against
each other along the sum, which keeps its value; two a layer sees only as their product
(``patch * patch * out``, ``_forms/sources/products.py``) are tried as its other factorizations. Where such a build is exact, the value found is
one of several and is flagged as a guess (the rival named), never shown as proven. And a number
the constructor only tests for truth (``if elu:``) is shown as that truth where it rebuilds as
exactly, the number named as the rival. A required whole number with no default, whose draft
(nothing) does not build, is tried one above: a number that sets tensor values alone
(``sign * rgb_range * mean``), which the gate does not compare, or that no part keeps, rebuilds
as exactly there and is flagged.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import torch
from torch import nn

from ..budget import Budget
from ..field import Field
from ..rebuild.compare import cast_like, differences
from ..rebuild.parts import Parts, parts
from ..rebuild.real import Rebuild
from ..sources.floored import Floored
from ..sources.products import Product
from ..sources.sums import Sum
from ..values import same
from .rules.factored import refactored

__all__ = ["settle"]

_FLOAT_STEP = 1e-6  # relative: far inside the interval of floats that make one whole number


def _exact(
    values: dict[str, Any],
    make: Callable[[dict[str, Any]], nn.Module],
    live: Parts,
    dtype: torch.dtype | None,
    cap: int,
    budget: Budget,
    real_ok: bool,
) -> bool:
    build = Rebuild(cap, budget.ceiling, real_ok=real_ok)
    try:
        built = build.run(lambda: make(values))
        cast_like(built, dtype)
    except Exception:  # noqa: BLE001 - a draft value the class rejects is no rival
        if budget.past_ceiling():
            budget.stop()
        return False
    finally:
        budget.charge(build.work)
    return not differences(live, parts(built))


def _same_one(v: Any, a: Any) -> bool:
    """``v`` is ``a``: the same object (a factory), or an equal string (a spelling)."""
    return v is a or (type(v) is str and type(a) is str and v == a)


def _reversed(v: Any) -> Any:
    """A str, tuple or list in the other order, where that is another value; else None."""
    if isinstance(v, (str, tuple, list)) and len(v) > 1 and v[::-1] != v:
        return v[::-1]
    return None


def _lengths(v: list[Any] | tuple[Any, ...] | Any) -> list[Any]:
    """A list or tuple one item shorter: where it rebuilds as exactly, only some of its items
    are read (``scale = args.scale[0]``), and its length is not known. Not one item longer:
    a model that zips its per-stage lists with its stages ignores an extra item (timm's
    ResNet ``layers``, ConvNeXt ``depths``), and flagging every such list as a guess says
    nothing a person could use."""
    if type(v) not in (list, tuple) or len(v) < 2:
        return []  # a namedtuple, a torch.Size: its length is its kind's
    return [v[:-1]]


def _ends(v: Any) -> list[Any]:
    """A list or tuple of whole numbers with its last, then its first, item one larger: where
    it rebuilds as exactly, the constructor never reads that item (``sizes[:-1] + [p * n]``),
    and the value found for it is not known."""
    if type(v) not in (list, tuple) or not v or not all(type(x) is int for x in v):
        return []
    last, first = [*v[:-1], v[-1] + 1], [v[0] + 1, *v[1:]]
    return [type(v)(last), *([type(v)(first)] if len(v) > 1 else [])]


def _int_rivals(v: Any) -> list[int]:
    """A whole number one above and one below, then twice it, for one the constructor reads
    only in tests (``i % every == 0``, ``if i >= start``, ``assert h % 16 == 0``): such a
    number rebuilds as exactly at many values, and the search proves none of them. (One taken as
    a plain truth, ``if elu:``, is then shown as that truth, below.)"""
    if type(v) is not int:
        return []
    return [v + 1, *([v - 1, 2 * v] if v > 0 else [])]


def _fewer_keys(v: Any) -> list[dict[Any, Any]]:
    """A dict without its first, then its last, key, for one the constructor iterates
    (``iterated``; a config read by its keys holds keys at their defaults that build alike, and
    is no guess for that): read back off a container that also holds layers made outside the
    loop over it (``self.heads["main"] = ...`` beside ``for k, n in
    heads.items()``), it may hold keys that were never passed."""
    if type(v) is not dict or len(v) < 2:
        return []
    keys = list(v)
    return [{k: v[k] for k in keys[1:]}, {k: v[k] for k in keys[:-1]}]


def _short32(v: Any) -> float | None:
    """The shortest decimal that is the same float32 as ``v``, where that is another float
    (0.10000000149011612, or its 12 digits 0.10000000149, -> 0.1); else None. Tried only for a
    whole spelling longer than 7 digits: a float32 holds no more."""
    if type(v) is not float or not math.isfinite(v) or v == 0 or len(repr(v)) <= 9:
        return None
    as32 = struct.unpack("f", struct.pack("f", v))[0]
    for digits in range(1, 8):
        short = float(f"{v:.{digits}g}")
        if struct.unpack("f", struct.pack("f", short))[0] == as32:
            return short if short != v else None
    return None


def _float_rivals(v: Any) -> list[float]:
    """A float a little above ``v`` (a short one the note can show: 6.0 -> 6.0006), then a hair
    below (where ``v`` sits at the top of its interval: a ceiling)."""
    if type(v) is not float or not math.isfinite(v) or v == 0:
        return []
    return [float(f"{v * (1 + 100 * _FLOAT_STEP):.6g}"), v * (1 - _FLOAT_STEP)]


def _along(s: Sum, values: dict[str, Any], moved: set[str]) -> Iterable[dict[str, int]]:
    """Values of two of the sum's parameters (one the search moved) moved against each other so
    that the sum keeps its value: ``2 * enc + dec`` at (8, 5) gives (7, 7) and (9, 3)."""
    for i, (a, ca) in enumerate(s.coefs):
        for b, cb in s.coefs[i + 1 :]:
            if (
                not ({a, b} & moved)
                or type(values.get(a)) is not int
                or type(values.get(b)) is not int
            ):
                continue
            g = math.gcd(ca, cb)
            for k in (1, -1):
                na, nb = values[a] + k * cb // g, values[b] - k * ca // g
                if na > 0 and nb > 0:
                    yield {a: na, b: nb}


def settle(
    drafts: list[Field],
    values: dict[str, Any],
    make: Callable[[dict[str, Any]], nn.Module],
    live: Parts,
    dtype: torch.dtype | None,
    budget: Budget,
    real_ok: bool = False,
    sums: Iterable[Sum | Product | Floored] = (),
    flags: frozenset[str] = frozenset(),
    others: dict[str, list[Any]] | None = None,
    moduli: Iterable[tuple[str, str | int]] = (),
    iterated: frozenset[str] = frozenset(),
    tested: frozenset[str] = frozenset(),
    handed: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Of ``values`` (an exact search's), each field of ``drafts`` whose draft value rebuilds
    ``live`` as exactly is put back to its draft value in ``values`` (a required one without a
    default keeps the value found); returns {name: the rival value, the one not kept}. One build
    per field moved (two for a sequence: in the other order, a rebuild as exact flags the value
    found, whose items are then not known), whatever the ``budget`` has left (charged to it):
    only its safety ceiling stops them, and a field not tried by then keeps the value found (the
    form says so).
    ``real_ok``: a build that reads tensor values is made for real (``rebuild/real.py``).
    ``moduli``: pairs (``i``, ``k``) read only as ``i % k`` (``sources/moduli.py``): ``i + k``
    rebuilds alike, and so may ``k + 1`` or 1; where one does, the value found is flagged (``k``
    a literal: ``i + k`` and ``i - k`` alone)."""
    cap = 4 * len(live.summary) + 64
    rivals: dict[str, Any] = {}
    for f in drafts:
        if f.name not in values or f.kind in ("varargs", "varkw", "config") or f.group:
            continue
        found = values[f.name]
        if same(found, f.value):
            continue
        if budget.stopped:
            break
        short = _short32(found)
        if short is not None and _exact(
            {**values, f.name: short}, make, live, dtype, cap, budget, real_ok
        ):
            # A float read back through float32 (``linspace(0, 0.1, n)[-1].item()`` is
            # 0.10000000149011612): its shortest spelling rebuilds alike and is what was typed.
            values[f.name] = found = short
        if not _exact({**values, f.name: f.value}, make, live, dtype, cap, budget, real_ok):
            # A sequence whose items rebuild as exactly in the other order tells only its
            # length (``num_classes = len(labels)``); a float a hair away as exactly, only the
            # whole number it makes: the value found is a guess, flagged.
            other = _reversed(found)
            near = [other] if other is not None else _float_rivals(found)
            # One above or below only where the constructor reads the number only in tests
            # (``tested``): a width or a count one off builds another module, each try a build.
            near += _lengths(found) + _ends(found)
            near += _int_rivals(found) if f.name in tested else []
            if f.name not in tested and f.name not in handed:
                # One above and one below, for a whole number the search found that no layer is
                # handed: one that sets tensor values alone (``sign * rgb_range * mean``), is
                # read through a step (``int(log2(img_size))``) or kept by no part rebuilds as
                # exactly there, and is no proven value. Not a width handed to a layer, which
                # its repr shows: a build each, and a child form's builds are its parent's too.
                near += _int_rivals(found)[:2]
            near += _fewer_keys(found) if f.name in iterated else []
            for v in near:
                if _exact({**values, f.name: v}, make, live, dtype, cap, budget, real_ok):
                    rivals[f.name] = v
                    if isinstance(v, (list, tuple)) and len(v) < len(found):
                        # The shorter is as likely (none of its items is unread): shown.
                        values[f.name], rivals[f.name] = v, found
                    break
            continue
        if f.required and f.value is None:
            # No default: None is no likelier than the value found (drop_path=0.0 where None
            # builds the same), which stays, flagged.
            rivals[f.name] = f.value
        else:
            values[f.name] = f.value
            rivals[f.name] = found
    # A number the constructor takes as a truth (``if elu:``, ``flags``) where its truth rebuilds
    # as exactly: the truth is shown, the number named as the rival (``elu=8`` was True; a
    # rate a flag named like a dropout was offered, ``use_dropout=1e-05``, too). Not 0
    # or 1: False and True are 0 and 1 to arithmetic too (``group_size=1``, ``drop_path=0.0``).
    for name in sorted(flags):
        v = values.get(name)
        if (
            type(v) in (int, float)
            and v not in (0, 1)
            and (
                name not in rivals
                or _int_rivals(v).count(rivals[name])
                or _float_rivals(v).count(rivals[name])
            )
            and not budget.stopped
        ):
            if _exact({**values, name: bool(v)}, make, live, dtype, cap, budget, real_ok):
                values[name], rivals[name] = bool(v), v
    # A factory found among the module's functions named like the field (``sources/called.py``)
    # where another of them rebuilds as exactly: which one was passed is not known.
    # So is a name whose case the constructor changes before it looks it up
    # (``sources/looked_up.py``: "lstm" and "LSTM"), compared by equality as strings are.
    for name, alike in (others or {}).items():
        v = values.get(name)
        if name in rivals or budget.stopped or not any(_same_one(v, a) for a in alike):
            continue
        for other in (a for a in alike if not _same_one(v, a)):
            if _exact({**values, name: other}, make, live, dtype, cap, budget, real_ok):
                rivals[name] = other
                break
    # ``i % k``: which place and which period is not known where another pair builds alike.
    # A literal period (``(depth - 4) % 6``): the values next to it that pass the same test.
    for i, k in moduli:
        vi, vk = values.get(i), k if isinstance(k, int) else values.get(k)
        if type(vi) is not int or type(vk) is not int or vk < 1 or budget.stopped:
            continue
        tries = (
            ((i, vi + vk), (k, vk + 1), (k, 1))
            if isinstance(k, str)
            else ((i, vi + vk), *(((i, vi - vk),) if vi >= vk else ()))
        )
        for name, v in tries:
            if name not in rivals and v != values[name]:
                if _exact({**values, name: v}, make, live, dtype, cap, budget, real_ok):
                    rivals[name] = v
    moved = {f.name for f in drafts if f.name in values and not same(values[f.name], f.value)}
    for s in sums:
        if budget.stopped:
            break
        rivals_of: Iterable[dict[str, Any]]
        if not isinstance(s, (Sum, Product)):
            # A width through floor divisions (``floored.py``): one above or below an argument
            # the search moved may make the same width (``(n_mels - 1) // 2``).
            rivals_of = _neighbours(s.names, values, moved)
        elif isinstance(s, Sum):
            rivals_of = _along(s, values, moved)
        else:
            rivals_of = refactored(s, values, moved)
        for change in rivals_of:
            if all(n not in rivals for n in change) and _exact(
                {**values, **change}, make, live, dtype, cap, budget, real_ok
            ):
                rivals.update(change)  # each field: the other value that rebuilds as exactly
                break
    return rivals


def _neighbours(
    names: Iterable[str], values: Mapping[str, Any], moved: set[str]
) -> Iterator[dict[str, int]]:
    """One above and one below each whole number of ``names`` the search moved."""
    for n in names:
        v = values.get(n)
        if n in moved and type(v) is int:
            yield from ({n: x} for x in (v + 1, v - 1) if x > 0)
