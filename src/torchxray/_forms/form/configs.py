"""A config argument shown as sub-fields (``expand``): ``config.hidden_size``,
``config.num_attention_heads``, ..., those the class reads first (``config.<name>`` and
``getattr(config, "<name>")`` found with ``ast`` in the class's ``__init__`` and ``forward``:
``reads``), then the rest; and an edit of them made on a copy (``with_changes``): an edit never
touches the object the model's layers share.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import functools
import inspect
import textwrap
from typing import Any

from ..._signature import original
from ..configs import config_items, is_config, is_hf
from ..field import Field
from ..kinds import KindInfo, kind_of
from ..values import to_text

__all__ = ["expand", "reads", "with_changes"]


@functools.lru_cache(maxsize=512)
def reads(cls: type, param: str) -> tuple[str, ...]:
    """Attribute names the class reads from its parameter ``param`` (``param.<name>``,
    ``getattr(param, "<name>")``) in ``__init__`` and ``forward``, first use first; () when the
    source cannot be read."""
    found: dict[str, None] = {}
    for meth in ("__init__", "forward"):
        fn = original(getattr(cls, meth, None))  # through wrappers (``torchxray._signature``)
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))  # type: ignore[arg-type]
        except (OSError, TypeError, SyntaxError, IndentationError):
            continue
        # forward reads `self.config.x`; __init__ reads the parameter itself.
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _names_config(node.value, param, meth):
                found.setdefault(node.attr, None)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                and len(node.args) >= 2
                and _names_config(node.args[0], param, meth)
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            ):
                found.setdefault(node.args[1].value, None)
    return tuple(found)


def _names_config(node: ast.expr, param: str, meth: str) -> bool:
    if isinstance(node, ast.Name):
        return node.id == param
    return (
        meth == "forward"
        and isinstance(node, ast.Attribute)
        and node.attr == param
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def with_changes(config: Any, changes: dict[str, Any]) -> Any:
    """A copy of ``config`` with ``changes`` set, a nested config's field by its dotted name
    (``{"model.dropout": 0.2}``); the original is never touched."""
    flat = {k: v for k, v in changes.items() if "." not in k}
    inner: dict[str, dict[str, Any]] = {}
    for k, v in changes.items():
        if "." in k:
            head, rest = k.split(".", 1)
            inner.setdefault(head, {})[rest] = v
    flat |= {head: with_changes(getattr(config, head), sets) for head, sets in inner.items()}
    params = getattr(type(config), "__dataclass_params__", None)
    if params is not None and params.frozen:
        return dataclasses.replace(config, **flat)
    new = copy.deepcopy(config)
    for name, value in flat.items():
        setattr(new, name, value)
    return new


def expand(cls: type, parent: Field, info: KindInfo) -> list[tuple[Field, KindInfo]]:
    """The parent field (kind "config") followed by one sub-field per config field, those the
    class reads first."""
    items = config_items(parent.value)
    read = reads(cls, parent.name)
    # transformers configs alias fields (GPT-2's num_attention_heads is n_head): show a field
    # under the name the class reads it by, once.
    aliases = getattr(type(parent.value), "attribute_map", None) or {}
    for alias in read:
        target = aliases.get(alias)
        if alias not in items and target in items:
            items = {(alias if k == target else k): v for k, v in items.items()}
    order = [n for n in read if n in items] + [n for n in items if n not in read]
    known = bool(read)
    out = [(dataclasses.replace(parent, kind="config"), dataclasses.replace(info, kind="config"))]
    out += _fields(cls, parent, items, order, read if known else None)
    return out


def _fields(
    cls: type, parent: Field, items: dict[str, Any], order: list[str], read: tuple[str, ...] | None
) -> list[tuple[Field, KindInfo]]:
    """One sub-field per literal field of a config, then each nested config's (a namespace in a
    namespace: ``cfg.model.dropout``), all in the top-level argument's group."""
    group = parent.group or parent.name
    out: list[tuple[Field, KindInfo]] = []
    for key in order:
        value = items[key]
        sub = kind_of(cls, key, inspect.Parameter.empty, value, value)
        if value is None:
            sub = dataclasses.replace(sub, optional=True)
        f = Field(
            name=f"{parent.name}.{key}",
            kind=sub.kind,
            value=value,
            default=None,
            required=False,
            choices=sub.choices,
            origin=parent.origin,
            annotation="",
            text=to_text(sub.kind, value),
            optional=sub.optional,
            param_kind="KEYWORD_ONLY",
            group=group,
            read=(key in read) if read is not None else None,
        )
        out.append((f, sub))
    depth = parent.name.count(".")
    for key, value in _nested(parent.value).items() if depth < _DEPTH else ():
        head = Field(
            name=f"{parent.name}.{key}", kind="config", value=value, default=None,
            required=False, choices=(), origin=parent.origin, annotation="",
            text=to_text("config", value), optional=False, param_kind="KEYWORD_ONLY",
            group=group,
        )  # fmt: skip
        # No field of its own: its fields sit in the argument's group, labelled "net.p".
        inner = config_items(value)
        out += _fields(cls, head, inner, list(inner), None)
    return out


_DEPTH = 3  # configs nested in a config shown, down to cfg.a.b.c


def _nested(config: Any) -> dict[str, Any]:
    """The config's fields that are configs themselves (not a library's big config)."""
    try:
        public = {k: v for k, v in vars(config).items() if not k.startswith("_")}
    except TypeError:
        return {}
    return {k: v for k, v in public.items() if is_config(v) and not is_hf(v)}
