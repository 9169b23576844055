"""A constructor's source as the usage reader reads it (stage 2, ``_forms/sources/code.py``): the
parameter a call hands a value to (by name, or at its place among ``*args``), the object a callee
names, the attribute that keeps a call's result or each unpacked item."""

from __future__ import annotations

import ast

from torch import nn

from torchxray._forms.sources.code import (
    bound,
    code_of,
    kept_items,
    kept_under,
    resolved,
)


def _call(text: str) -> ast.Call:
    node = ast.parse(text).body[0]
    value = node.value if isinstance(node, (ast.Expr, ast.Assign)) else None
    assert isinstance(value, ast.Call)
    return value


def test_the_parameter_a_call_hands_a_value_to() -> None:
    assert bound(_call("nn.Linear(a, b)"), "b", nn.Linear) == ("out_features", -1)
    assert bound(_call("nn.Linear(a, out_features=b)"), "b", nn.Linear) == ("out_features", -1)
    # Collected by *args: its place among them (nn.Sequential(first, encoder, head): 1).
    assert bound(_call("nn.Sequential(first, encoder, head)"), "encoder", nn.Sequential) == (
        "args",
        1,
    )
    # After a *spread the places are unknown; a name not handed is None.
    assert bound(_call("nn.Sequential(*xs, encoder)"), "encoder", nn.Sequential) is None
    assert bound(_call("nn.Linear(a, b)"), "c", nn.Linear) is None
    # A node of the call rather than a name: cfg.width handed as in_features.
    call = _call("nn.Linear(cfg.width, 4)")
    assert bound(call, call.args[0], nn.Linear) == ("in_features", -1)


class _Net(nn.Module):
    def __init__(self, size: tuple[int, int], width: int) -> None:
        super().__init__()
        h, w = size
        self.h, self.w = h, w
        self.fc = nn.Linear(width, h * w)


def test_a_constructors_source_read_once() -> None:
    code = code_of(_Net.__init__)
    assert code is not None and code is code_of(_Net.__init__)  # read once
    assert resolved(ast.parse("nn.Linear").body[0].value, code.scope) is nn.Linear  # type: ignore[attr-defined]
    assert kept_items(code.tree, ("h", "w")) == ("h", "w")
    call = next(n for n in ast.walk(code.tree) if isinstance(n, ast.Call) and n.args)
    assert kept_under(call, code.up) == "fc"
