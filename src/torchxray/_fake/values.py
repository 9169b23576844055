"""Operations whose result depends on tensor values (``nonzero``, ``.item()``, boolean-mask
indexing, data-dependent routing) or that hand the values themselves to Python (``.numpy()``,
``.tolist()``), which fake tensors cannot run: the op that stopped a run.

`data_dependent_op(exc)` reads the op out of the exception fake mode raises ("aten.nonzero",
"aten._local_scalar_dense" read as ``.item()``, which ``.tolist()``, ``float()`` and an ``if`` on a
tensor go through too) or out of torch's refusal to give NumPy the memory of a tensor subclass,
which a FakeTensor is (".numpy()", also reached by ``np.asarray``); None for any other exception.
Callers ask only of an exception from a fake run: a real run's tensor subclass refuses
``.numpy()`` with the same words for reasons of its own. (torch's
real-tensor propagation, ``fake_tensor_propagate_real_tensors``, was tried for a fake run that
learns such sizes: torchvision's detectors then failed in composite kernels that need concrete
sizes, so callers run such a model for real instead.)
"""

from __future__ import annotations

__all__ = ["data_dependent_op", "headline", "op_text"]

_NUMPY = ".numpy()"
# What each op reads as in a message: `.item()` is what a user writes for _local_scalar_dense.
_READS = {
    "aten._local_scalar_dense": ".item() (aten._local_scalar_dense, as .tolist() or float() too)",
    _NUMPY: ".numpy() (a NumPy array of the tensor's values)",
}
# torch's words when NumPy asks a tensor subclass (a FakeTensor) for its memory.
_NO_NUMPY = ".numpy() is not supported for tensor subclasses"


def data_dependent_op(exc: BaseException) -> str | None:
    """The op a fake run stopped at because its result depends on values, e.g.
    "aten.nonzero"; "" when it is data-dependent but names no op; None otherwise."""
    from torch._subclasses import fake_tensor as ft

    if isinstance(exc, (ft.DataDependentOutputException, ft.DynamicOutputShapeException)):
        func = exc.args[0] if exc.args else None  # the OpOverload: "aten.nonzero.default"
        return str(func or "").removesuffix(".default")
    if isinstance(exc, RuntimeError) and _NO_NUMPY in str(exc):
        return _NUMPY
    kind = type(exc).__name__
    if kind == "GuardOnDataDependentSymNode" or "data-dependent" in str(exc).lower():
        return ""
    return None


def op_text(op: str) -> str:
    """How an op reads in a message ("aten.nonzero", ".item() (aten._local_scalar_dense)")."""
    return _READS.get(op, op) if op else "an operation"


def headline(op: str, meta: bool) -> str:
    """The failure in a status line's words: what a fake probe cannot run, why, what runs it.

    >>> headline("aten.nonzero", False)
    'a fake probe cannot run aten.nonzero: its output size depends on the values; run a real probe'
    """
    name = {"aten._local_scalar_dense": ".item()", _NUMPY: _NUMPY}.get(op, op or "an operation")
    why = (
        "it hands the values to Python"
        if name.startswith(".")
        else "its output size depends on the values"
    )
    then = (
        "; a model on the meta device holds none: build it on the CPU"
        if meta
        else "; run a real probe"
    )
    return f"a fake probe cannot run {name}: {why}{then}"
