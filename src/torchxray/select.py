"""Selecting modules by path and class, and naming a selection the way peft's ``target_modules`` does.

    >>> import torch.nn as nn, torchxray as tx
    >>> model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Sequential(nn.Linear(4, 2)))
    >>> tx.select(model, cls=nn.Linear), tx.select(model, pattern=r"^2")
    (['0', '2.0'], ['2', '2.0'])
    >>> tx.peft_targets(model, ["2.0"])
    ['2.0']

``select`` searches ``pattern`` (a regex, ``re.search``: anywhere in the path unless anchored) in
every path of ``named_modules`` and/or keeps the modules that are instances of ``cls`` (a class,
or a class name matched against every class of the module's MRO, bare or dotted), and returns
the paths in ``named_modules`` order: a module reachable at several paths comes once, at its first.

``peft_targets`` turns a list of paths into a ``target_modules`` value for a peft config
(``LoraConfig(target_modules=...)``) that peft's matcher (``check_target_module_exists`` in peft
0.21: a list entry matches a module name equal to it or ending with ``"." + entry``; a string is
``re.fullmatch``-ed) turns into exactly those modules: the shortest unambiguous name suffixes
("q_proj" when every q_proj is wanted, "layers.0.self_attn.q_proj" when one is), or a regex string
when no list can say it (a wanted "fc" whose name also ends another, unwanted, module's name).
Whether peft can wrap a module of that class is peft's business: it raises for the ones it cannot.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import torch.nn as nn

from ._patch.paths import missing_path

__all__ = ["explain", "peft_targets", "select"]


def select(
    model: nn.Module, pattern: str | re.Pattern[str] | None = None, cls: type | str | None = None
) -> list[str]:
    """Paths (``named_modules`` order) whose path matches ``pattern`` and whose module is a
    ``cls``; a selection that matches nothing is an empty list (`explain` says why).

    A module reachable at several paths comes once, at its first.

    Args:
        model: The model.
        pattern: A regex searched (``re.search``) in every path: anywhere unless anchored.
        cls: A class (``isinstance``), or a class name matched against every class of the
            module's MRO, bare (``"Linear"``) or dotted (``"torch.nn.Linear"``).

    Returns:
        The matching paths, in `named_modules` order.

    Raises:
        TypeError: `model` is not an `nn.Module`.
        ValueError: Neither `pattern` nor `cls` is given, or `pattern` is not a valid regex.

    Examples:
        >>> import torch.nn as nn, torchxray as tx
        >>> model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Sequential(nn.Linear(4, 2)))
        >>> tx.select(model, cls=nn.Linear), tx.select(model, r"^2", cls="Linear")
        (['0', '2.0'], ['2.0'])
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"select() needs an nn.Module, got {type(model).__name__}")
    if pattern is None and cls is None:
        raise ValueError("select() needs a pattern (a path regex), a cls, or both")
    rx = _regex(pattern)
    is_cls = _class_test(cls)
    return [
        path
        for path, m in model.named_modules()
        if (rx is None or rx.search(path) is not None) and is_cls(m)
    ]


def explain(
    model: nn.Module, pattern: str | re.Pattern[str] | None = None, cls: type | str | None = None
) -> str:
    """One line for a UI: how many modules match, or why nothing does and what is there."""
    found = select(model, pattern, cls)
    what = " and ".join(
        w
        for w in (
            f"path regex {_text(pattern)!r}" if pattern is not None else "",
            f"class {_cls_name(cls)}" if cls is not None else "",
        )
        if w
    )
    if found:
        return f"{len(found)} module{'s' if len(found) != 1 else ''} match {what}"
    classes = sorted({type(m).__name__ for m in model.modules()})
    shown = ", ".join(classes[:12]) + (
        f" and {len(classes) - 12} more" if len(classes) > 12 else ""
    )
    return f"no module matches {what}; classes in the model: {shown}"


def peft_targets(model: nn.Module, paths: Iterable[str]) -> list[str] | str:
    """A ``target_modules`` value that selects exactly ``paths`` in peft (see the module
    docstring): a list of name suffixes, or a regex string when no list can.

    The value follows peft's own matcher (a list entry matches a module name equal to it or
    ending with ``"." + entry``; a string is ``re.fullmatch``-ed): the shortest unambiguous
    suffixes, or a regex when a wanted name also ends an unwanted one.

    Args:
        model: The model the config will be applied to.
        paths: The module paths to target (``tx.select`` gives them).

    Returns:
        A list of name suffixes, or a regex string, for ``LoraConfig(target_modules=...)``.

    Raises:
        TypeError: `model` is not an `nn.Module`, or a path is not a string.
        ValueError: No paths, the root (``""``), or the second path of a shared module.
        KeyError: A path names no module.

    Examples:
        >>> import torch.nn as nn, torchxray as tx
        >>> block = lambda: nn.ModuleDict({"q": nn.Linear(4, 4), "k": nn.Linear(4, 4)})
        >>> model = nn.ModuleDict({"layers": nn.ModuleList([block(), block()])})
        >>> tx.peft_targets(model, tx.select(model, "[.]q$"))
        ['q']
        >>> tx.peft_targets(model, ["layers.0.q"])
        ['0.q']
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"peft_targets() needs an nn.Module, got {type(model).__name__}")
    wanted = [paths] if isinstance(paths, str) else list(paths)
    if not wanted:
        raise ValueError("peft_targets() got no paths: the selection matched nothing")
    keys = [k for k, _ in model.named_modules() if k]  # peft never wraps the model itself
    known = set(keys)
    for p in wanted:
        if not isinstance(p, str):
            raise TypeError(f"paths must be dotted strings like 'layers.0.q_proj', got {p!r}")
        if p == "":
            raise ValueError("'' is the model itself, which peft cannot target; select submodules")
        if p not in known:
            raise _unknown(model, p, keys)
    targets = set(wanted)
    # Each suffix of each name, with how many *unwanted* names end with it: a suffix is usable
    # when that count is zero.
    unwanted: dict[str, int] = {}
    for key in keys:
        parts = key.split(".")
        for k in range(1, len(parts) + 1):
            suffix = ".".join(parts[-k:])
            unwanted[suffix] = unwanted.get(suffix, 0) + (key not in targets)
    chosen: dict[str, None] = {}
    exact: list[str] = []  # wanted names that every suffix (the name itself too) overreaches
    for key in (k for k in keys if k in targets):
        parts = key.split(".")
        for k in range(1, len(parts) + 1):
            suffix = ".".join(parts[-k:])
            if unwanted[suffix] == 0:
                chosen[suffix] = None
                break
        else:
            exact.append(key)
    if not exact:
        return list(chosen)
    alternatives = [rf"(?:.*\.)?{re.escape(s)}" for s in chosen] + [re.escape(k) for k in exact]
    return "(?:" + "|".join(alternatives) + ")"


def _unknown(model: nn.Module, path: str, keys: list[str]) -> Exception:
    """A second path of a shared module is not a name peft sees: say which one it sees."""
    try:
        module = model.get_submodule(path)
    except (AttributeError, TypeError):
        return missing_path(path, keys)
    first = next((k for k, m in model.named_modules() if m is module), None)
    return ValueError(
        f"{path!r} is another path of the module peft names {first!r} (named_modules lists a "
        f"shared module once); use {first!r}"
    )


def peft_matches(target_modules: list[str] | str, key: str) -> bool:
    """peft 0.21's test of one module name against ``target_modules`` (without its
    ``exclude_modules`` and ``layers_to_transform`` options, which torchxray does not emit)."""
    if isinstance(target_modules, str):
        return re.fullmatch(target_modules, key) is not None
    return key in target_modules or any(key.endswith(f".{t}") for t in target_modules)


def _regex(pattern: str | re.Pattern[str] | None) -> re.Pattern[str] | None:
    if pattern is None or isinstance(pattern, re.Pattern):
        return pattern
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a regex string, got {type(pattern).__name__}")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(
            f"invalid path regex {pattern!r}: {exc}; escape special characters with re.escape() "
            "or a backslash (e.g. r'layers\\.0\\.')"
        ) from None


def _class_test(cls: type | str | None) -> Callable[[nn.Module], bool]:
    if cls is None:
        return lambda m: True
    if isinstance(cls, type):
        return lambda m: isinstance(m, cls)
    if isinstance(cls, str) and cls:
        return lambda m: any(
            c.__name__ == cls or f"{c.__module__}.{c.__qualname__}" == cls for c in type(m).__mro__
        )
    raise TypeError(f"cls must be a class or a class name like 'Linear', got {cls!r}")


def _text(pattern: str | re.Pattern[str] | None) -> str:
    return pattern.pattern if isinstance(pattern, re.Pattern) else str(pattern)


def _cls_name(cls: type | str | None) -> str:
    return cls.__name__ if isinstance(cls, type) else str(cls)
