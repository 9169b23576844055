"""Stand-ins of the compile check (`torchxray._compile.stubs`): what a module is while it stands
in for itself, and that it is exactly itself again afterwards."""

from __future__ import annotations

import inspect
import types

import pytest
import torch
from torch import nn

import torchxray as tx
from torchxray._compile.capture import Captured
from torchxray._compile.stubs import Stubs


class Residual(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc(x)


class Registered(Residual):
    seen: list[type] = []

    def __init_subclass__(cls, **kwargs: object) -> None:  # a registry: no subclass may be made
        super().__init_subclass__(**kwargs)
        Registered.seen.append(cls)


def _out(shape: tuple[int, ...] = (2, 8)) -> Captured:
    """A recorded call: one (2, 8) tensor in, a tensor of `shape` out."""
    return Captured(0, (torch.empty(2, 8),), {}, output=torch.empty(shape))


def test_a_stand_in_is_its_class_forward_and_the_module_is_itself_again_after() -> None:
    block = Residual()
    before = dict(vars(block))
    with Stubs([(block, _out())]):
        # what dynamo reads to call a module's forward straight away, not through _call_impl
        assert "forward" not in vars(block)
        assert isinstance(inspect.getattr_static(block, "forward"), types.FunctionType)
        assert isinstance(block, Residual) and type(block).__name__ == "Residual"
        x = torch.randn(2, 8, requires_grad=True)
        y = block(x)
        assert y.shape == (2, 8) and y.requires_grad  # a copy of its input: one op
        assert y.grad_fn is not None and "Clone" in type(y.grad_fn).__name__
        z = block(torch.randn(2, 8))  # an input without grad: joined to the block's weight
        assert z.requires_grad and "Clone" not in type(z.grad_fn).__name__
    assert type(block) is Residual and vars(block) == before


def test_the_module_is_restored_when_the_trace_inside_raises() -> None:
    block = Residual()
    with pytest.raises(RuntimeError), Stubs([(block, _out())]):
        raise RuntimeError("a trace failed")
    assert type(block) is Residual and "forward" not in vars(block)


def test_a_class_that_registers_its_subclasses_gets_an_instance_forward() -> None:
    block = Registered()
    with Stubs([(block, _out())]):
        assert type(block) is Registered and "forward" in vars(block)
        assert block(torch.randn(2, 8)).shape == (2, 8)
    assert Registered.seen == [] and "forward" not in vars(block)


def test_a_forward_set_on_the_instance_is_stood_in_for_and_put_back() -> None:
    block = Residual()
    own = types.MethodType(lambda self, x: x * 3, block)
    block.forward = own  # type: ignore[method-assign]
    with Stubs([(block, _out((5, 8)))]):
        assert type(block) is Residual
        assert block(torch.randn(2, 8)).shape == (5, 8)
    assert vars(block)["forward"] is own


def test_a_stand_in_whose_output_differs_from_its_input_is_still_derived_from_it() -> None:
    block = Residual()
    with Stubs([(block, _out((3, 8)))]):
        y = block(torch.randn(2, 8, requires_grad=True))
    assert y.shape == (3, 8) and y.requires_grad


class Stack(nn.Module):
    def __init__(self, depth: int) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Residual() for _ in range(depth))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


def test_a_check_leaves_every_block_of_its_own_class() -> None:
    model = Stack(6)
    rep = tx.compile_check(model, torch.randn(2, 8))
    assert rep.ok and not rep.export
    assert all(type(b) is Residual and "forward" not in vars(b) for b in model.blocks)


class TwoLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.a(x) + self.b(x)


def test_export_reads_a_stand_in_s_parameter_as_the_parameter() -> None:
    # The input does not require grad, so b's stand-in is joined to b's weight: read through the
    # module as it runs, it is the parameter export lifts, not a constant held by the stand-in.
    model = TwoLinear()
    x = torch.randn(2, 8)
    with Stubs([(model.b, Captured(0, (x,), {}, output=torch.empty(2, 8)))]):
        ep = torch.export.export(model, (x,), strict=False)
    assert "b.weight" in ep.graph_signature.parameters
    assert not ep.constants  # nothing lifted from the stand-in's closure
    assert type(model.b) is nn.Linear


def test_a_residual_stand_in_is_its_input_itself_only_where_an_in_place_op_stays_allowed() -> None:
    block = Residual()
    weight = nn.Parameter(torch.randn(4, 8))
    with Stubs([(block, _out())]):
        h = torch.randn(2, 8) * weight[:2]  # not a leaf, not a view: the input itself, no op
        assert block(h) is h
        for x in (weight[:2], torch.randn(2, 8, requires_grad=True)):  # a view of a leaf, a leaf
            y = block(x)
            assert y is not x and "Clone" in type(y.grad_fn).__name__
            y.add_(1)  # allowed on the copy, as on the real block's output


class Queried(nn.Module):
    """Identical blocks on a parameter (or a slice of it), their outputs changed in place."""

    def __init__(self, view: bool) -> None:
        super().__init__()
        self.view = view
        self.query = nn.Parameter(torch.randn(2, 8))
        self.blocks = nn.ModuleList(Residual() for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = self.query[:, :] if self.view else self.query
        total = x
        for block in self.blocks:
            y = block(q)
            y.mul_(2)
            total = total + y
        return total


@pytest.mark.parametrize("view", [False, True], ids=["leaf", "view"])
def test_an_in_place_op_on_a_stand_in_s_output_is_checked_as_on_the_real_one(view: bool) -> None:
    model = Queried(view)
    x = torch.randn(2, 8)
    rep = tx.compile_check(model, x)
    assert rep.error is None and not rep.notes
    assert rep.ok and not rep.export
    assert torch._dynamo.explain(model)(x).graph_break_count == 0
    assert model.query.grad is None and model(x).shape == (2, 8)


def test_a_module_inside_a_stand_in_is_left_as_it_is() -> None:
    model = Stack(2)
    inner = model.blocks[0].fc
    calls = [(inner, _out()), (model.blocks[0], _out()), (model.blocks[1], _out())]
    with Stubs(calls) as stubs:
        assert type(inner) is nn.Linear and "forward" not in vars(inner)
        assert stubs.stood == {id(model.blocks[0]), id(model.blocks[1])}


def test_every_stand_in_joins_one_parameter_and_a_frozen_module_none() -> None:
    blocks = [Residual() for _ in range(3)]
    blocks[2].requires_grad_(False)
    calls = [(b, Captured(0, (torch.empty(2, 8),), {}, output=torch.empty(3, 8))) for b in blocks]
    with Stubs(calls) as stubs:
        assert stubs.reads is blocks[0].fc.weight  # the one export keeps registered
        outs = [b(torch.randn(2, 8)) for b in blocks]  # inputs without grad: joined to it
    assert outs[0].requires_grad and outs[1].requires_grad
    assert not outs[2].requires_grad  # the real frozen block's output does not require grad
    outs[1].sum().backward()
    assert blocks[0].fc.weight.grad is not None and blocks[1].fc.weight.grad is None
