"""The lazy pass reads each distinct tensor layout once and reuses it for repeated layers
(_tree/lazy.py): layers that differ in any of what the counts depend on must not share it."""

from __future__ import annotations

import torch
import torch.nn as nn

import torchxray as tx


def _expected(m: nn.Module) -> tuple[int, int, int, tuple[str, ...], tuple[str, ...]]:
    ts = [t for t in [*m._parameters.values(), *m._buffers.values()] if t is not None]
    params = [p for p in m._parameters.values() if p is not None]
    return (
        sum(p.numel() for p in params),
        sum(p.numel() for p in params if p.requires_grad),
        sum(t.numel() * t.element_size() for t in ts),
        tuple(sorted({str(t.device) for t in ts})),
        tuple(sorted({str(t.dtype).removeprefix("torch.") for t in ts})),
    )


def test_repeated_layers_that_differ_get_their_own_counts() -> None:
    frozen = nn.Linear(4, 4)
    frozen.weight.requires_grad_(False)
    with_buffer = nn.Linear(4, 4)
    with_buffer.register_buffer("scale", torch.ones(3))
    model = nn.Sequential(
        nn.Linear(4, 4),
        nn.Linear(4, 4),  # same layout as the first: the memo's hit
        frozen,  # requires_grad differs
        nn.Linear(4, 4).to(torch.float64),  # dtype differs
        nn.Linear(4, 4, device="meta"),  # device differs
        nn.Linear(4, 4, bias=False),  # a None parameter
        nn.Linear(4, 5),  # shape differs
        with_buffer,  # a buffer
        nn.BatchNorm1d(4),  # buffers of several dtypes
        nn.LazyLinear(3),  # uninitialised: not memoised, counts 0, not exact
        nn.LazyLinear(3),
    )
    tree = tx.walk(model)
    for i, m in enumerate(model):
        node = tree[str(i)]
        got = (node.params_own, node.trainable_own, node.bytes_own, node.devices, node.dtypes)
        if isinstance(m, nn.LazyLinear):
            assert node.params_own == 0 and not node.params_exact
            continue
        assert got == _expected(m), (i, got)
        assert node.params_exact
    assert tree["0"].signature == tree["1"].signature
    # the signature is structural (names, shapes, dtypes): frozen and meta copies share it
    assert len({tree[str(i)].signature for i in range(8)}) == 5
    assert tree.root.params_total == sum(
        p.numel() for p in model.parameters() if not isinstance(p, nn.UninitializedParameter)
    )
