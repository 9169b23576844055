"""What a constructor's ``def`` says without running it, for the resolver (``_signature.py``): its
parameters as its source spells them (``from_ast``: a class whose ``__init__`` a decorator hid),
and the keywords a torch layer's subclass reads out of its own ``**kwargs`` before handing the
rest, with its ``*args``, to ``super().__init__`` (``kwargs.pop("return_mask", False)``): the
resolver (``_signature.py``) gives such a class its parent's parameters and those keywords,
keyword-only. Read from the ``def``'s AST; None wherever the stars are used any other way.
"""

from __future__ import annotations

import ast
import inspect
from typing import Any

__all__ = ["from_ast", "own_keywords", "with_keywords"]

_P = inspect.Parameter


def from_ast(a: ast.arguments) -> inspect.Signature:
    """The signature an ``ast.arguments`` spells, its defaults and annotations as written (a
    default that is no literal raises ValueError naming it)."""

    def param(arg: ast.arg, kind: Any, d: ast.expr | None = None) -> inspect.Parameter:
        try:
            default = _P.empty if d is None else ast.literal_eval(d)
        except ValueError:
            said = ast.unparse(d) if d is not None else ""
            raise ValueError(f"the default of {arg.arg} ({said}) is not a literal") from None
        ann = _P.empty if arg.annotation is None else ast.unparse(arg.annotation)
        return _P(arg.arg, kind, default=default, annotation=ann)

    positional = [*a.posonlyargs, *a.args]
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    kinds = [_P.POSITIONAL_ONLY] * len(a.posonlyargs) + [_P.POSITIONAL_OR_KEYWORD] * len(a.args)
    params = [param(x, k, d) for x, k, d in zip(positional, kinds, defaults)]
    params += [param(a.vararg, _P.VAR_POSITIONAL)] if a.vararg else []
    params += [param(x, _P.KEYWORD_ONLY, d) for x, d in zip(a.kwonlyargs, a.kw_defaults)]
    params += [param(a.kwarg, _P.VAR_KEYWORD)] if a.kwarg else []
    return inspect.Signature(params)


def own_keywords(
    tree: ast.AST, star: str | None, dstar: str, hand: ast.Call
) -> dict[str, Any] | None:
    """The keywords a ``def`` (``tree``, its stars named ``star`` and ``dstar``) reads out of its
    ``**kwargs`` by constant keys before handing the rest, with its ``*args``, to
    ``super().__init__`` in ``hand`` (``if "k" in kwargs: self.k = kwargs["k"];
    kwargs.pop("k")``, ``kwargs.pop("k", d)``, ``kwargs.get("k", d)``), each with its default: the
    one ``pop``/``get`` gives, else the literal its ``else:`` branch sets (the value when the key
    is absent), else none (a key read without a test is required). None where the stars are
    used otherwise, no key is read, or a tested key has no literal for its absence. The resolver
    (``_signature.py``) finds the ``def`` and its one such call."""
    up = {c: n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    hands = [hand]
    handed = {id(a) for a in ast.walk(hands[0])}
    keys: dict[str, Any] = {}
    tested: dict[str, ast.Compare] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Name) or node.id not in (star, dstar) or id(node) in handed:
            continue
        if node.id == star:
            return None  # *args used otherwise: not handed on whole
        parent = up.get(node)
        key = _read_key(node, parent, up)
        if key is None:
            return None
        word, default = key
        if isinstance(parent, ast.Compare):
            tested[word] = parent
            keys.setdefault(word, _P.empty)
        elif default is not _P.empty or word not in keys:
            keys[word] = default if default is not _P.empty else keys.get(word, _P.empty)
    for word, test in tested.items():
        if keys[word] is _P.empty:
            keys[word] = _absent(test, up)
            if keys[word] is _P.empty:
                return None  # tested, and nothing says what its absence means
    return keys or None


def _read_key(node: ast.Name, parent: ast.AST | None, up: dict[ast.AST, ast.AST]) -> Any:
    """(key, default) for ``"k" in kwargs``, ``kwargs["k"]`` (a load or a ``del``),
    ``kwargs.pop("k"[, d])``, ``kwargs.get("k"[, d])``; None for any other use."""
    if (
        isinstance(parent, ast.Compare)
        and parent.comparators == [node]
        and isinstance(parent.ops[0], ast.In)
        and isinstance(parent.left, ast.Constant)
        and isinstance(parent.left.value, str)
    ):
        return parent.left.value, _P.empty
    if isinstance(parent, ast.Subscript) and parent.value is node:
        k = parent.slice
        if isinstance(k, ast.Constant) and isinstance(k.value, str):
            return k.value, _P.empty
        return None
    call = up.get(parent) if parent is not None else None
    if (
        isinstance(parent, ast.Attribute)
        and parent.attr in ("pop", "get")
        and isinstance(call, ast.Call)
        and call.func is parent
        and 1 <= len(call.args) <= 2
        and not call.keywords
        and isinstance(call.args[0], ast.Constant)
        and isinstance(call.args[0].value, str)
    ):
        if len(call.args) == 1:
            return call.args[0].value, _P.empty
        try:
            return call.args[0].value, ast.literal_eval(call.args[1])
        except ValueError:
            return None
    return None


def _absent(test: ast.Compare, up: dict[ast.AST, ast.AST]) -> Any:
    """The literal ``if "k" in kwargs: ... else: self.x = <literal>`` sets when the key is
    absent (one assignment in the ``else:``), or ``inspect.Parameter.empty``."""
    branch = up.get(test)
    if not isinstance(branch, ast.If) or branch.test is not test or len(branch.orelse) != 1:
        return _P.empty
    stmt = branch.orelse[0]
    if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant):
        return stmt.value.value
    return _P.empty


def with_keywords(parent: inspect.Signature, keys: dict[str, Any]) -> inspect.Signature:
    """``parent`` with the keywords ``keys`` names added, keyword-only, where it has none of
    that name (a key the parent takes is the parent's)."""
    params = [p for p in parent.parameters.values() if p.kind != _P.VAR_KEYWORD]
    spread = [p for p in parent.parameters.values() if p.kind == _P.VAR_KEYWORD]
    names = {p.name for p in params}
    extra = [_P(k, _P.KEYWORD_ONLY, default=d) for k, d in keys.items() if k not in names]
    try:
        return parent.replace(parameters=[*params, *extra, *spread])
    except ValueError:
        return parent
