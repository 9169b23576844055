"""What the rule branch_layer reads (``_forms/sources/branches.py``): the layers ``__init__``
makes only under a truth test of one argument, and which of the callee's parameters each
argument handed by name becomes. The models are the zoo's (``tests/handwritten/flagged_layers.py``)."""

from __future__ import annotations

from handwritten.flagged_layers import SineField, SineStack, SinLayer, StagedEncoder
from torch import nn

from torchxray._forms.sources.branches import Branch, branches


def test_the_layers_a_truth_test_makes_are_read_with_their_widths() -> None:
    got = set(branches(SineField))
    linear = (("in_features", "width"), ("out_features", "n_out"))
    assert Branch("linear_last", True, nn.Linear, linear) in got
    # Every argument handed by name: the rule moves those the live layer shows as whole numbers.
    other = (("n_in", "width"), ("n_out", "n_out"), ("w0", "w0"))
    assert Branch("linear_last", False, SinLayer, other) in got
    # A conditional expression, the layer made where the flag is False.
    assert Branch("sine_out", False, nn.Linear, linear) in set(branches(SineStack))
    # A test of a loop's index names no argument: no branch.
    assert branches(StagedEncoder) == ()


def test_the_parameters_read_inside_a_test_are_named() -> None:
    from torch import nn

    from torchxray._forms.sources.branches import tested

    class Staged(nn.Module):
        def __init__(self, depth, every, width, start=0):
            super().__init__()
            self.blocks = nn.ModuleList(
                nn.Linear(width, width) if i % every == 0 and i >= start else nn.Identity()
                for i in range(depth)
            )

    assert tested(Staged) == {"every", "start"}  # not depth or width: read outside the test
