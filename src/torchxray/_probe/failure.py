"""When a probed forward raises: which module it was (the innermost one the exception passed
through), what that module was called with, and a hint that names the likely cause: torchxray's
own bug, what fake tensors cannot do, memory, the patch the failure follows (`_probe.cause`),
and only then the example inputs."""

from __future__ import annotations

import os
import re
import types
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from .._fake.values import data_dependent_op, headline, op_text
from .._text import short
from .calls import RECORDED_CODE, inner_code
from .cause import patch_hint
from .records import ProbeError, TensorInfo
from .run import ProbeRun
from .values import call_inputs

__all__ = ["OWN_FAILURE", "localise"]

OWN_FAILURE = (
    "a bare forward of the model runs with these inputs: this failure is torchxray's, not the "
    "inputs' (please report it; mode='real' may work meanwhile)"
)

_CALL_IMPL_CODE = nn.Module._call_impl.__code__
# The package folder (torchxray/): the probe's own files are probe.py there and everything in
# _probe/ and in the fake-execution engine it runs on, _fake/.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_PROBE_DIRS = tuple(os.path.join(_PACKAGE_DIR, d) + os.sep for d in ("_probe", "_fake"))


def _module_frames(run: ProbeRun, exc: BaseException) -> list[tuple[nn.Module, types.FrameType]]:
    """The probed modules whose call the exception passed through, outermost first: frames of
    torch's ``_call_impl`` or of the probe's recording functions (`_probe.wrap`). A module called
    through both (hooks, then its recorded forward) is listed once, with its outer frame."""
    chain: list[tuple[nn.Module, types.FrameType]] = []
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code is _CALL_IMPL_CODE or frame.f_code is RECORDED_CODE:
            module = frame.f_locals.get("self")
            if (
                isinstance(module, nn.Module)
                and id(module) in run.paths
                and not (chain and chain[-1][0] is module)
            ):
                chain.append((module, frame))
        tb = tb.tb_next
    return chain


def localise(
    run: ProbeRun,
    exc: Exception,
    names: dict[str, str],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    caller: types.CodeType,
    patches: tuple[Any, ...] = (),
    bare: Callable[[], bool] | None = None,
) -> ProbeError:
    """The failed report's error; ``caller`` is the frame that called the model (its exceptions
    belong to the model, not to torchxray); ``patches`` the applied patch entries, if known;
    ``bare`` runs the model without the probe's recording, asked before the inputs are blamed."""
    chain = _module_frames(run, exc)
    through = {run.paths[id(module)] for module, _ in chain}
    # Calls still open: those the exception went through stay (as incomplete calls); the others
    # were cut short by an exception a forward caught earlier and are dropped.
    for call in run.stack:
        if call.path not in through:
            run.log.remove(call)
    run.stack.clear()
    if chain:
        inner: nn.Module | None
        inner, frame = chain[-1]
        path = run.paths[id(inner)]
        f_locals = frame.f_locals
        # What the module was called with (before its own pre-hooks, as the user passed it).
        infos = call_inputs(f_locals.get("args", ()), f_locals.get("kwargs"))
    else:  # raised before any module ran (preparing the inputs)
        path = ""
        inner = None
        infos = call_inputs(args, kwargs)
    hint = (
        _own_error(exc, caller)
        or _special_hint(exc, run.mode, run.device, path, any(run.flags))
        or _dtype_hint(exc, run.mode, run.device, inner)
    )
    if not hint and patches and chain:
        hint = patch_hint(patches, path, inner, run.log)
    if not hint and bare is not None and bare():
        # The inputs are blamed only for what a forward without torchxray does too.
        hint = OWN_FAILURE
    op = data_dependent_op(exc) if run.mode == "fake" else None
    moved = run.mode == "fake" and _unswappable(exc)
    named = ""
    if op is not None:
        named = headline(op, run.device.type == "meta")
    elif moved:
        named = (
            "a fake probe cannot move a layer the forward makes (nn.Module.to() swaps its fake "
            "weights, which torch refuses for tensors made under fake tensors); run a real probe"
        )
    return ProbeError(
        path=path,
        cls=names.get(path, type(run.model).__name__),
        exc_type=_type_name(exc),
        message=_message(exc, op),
        input_shapes=tuple(i.shape for i in infos if isinstance(i, TensorInfo)),
        hint=hint or _input_hint(exc),
        remedy="real" if (op is not None or moved) and run.device.type != "meta" else "",
        headline=named,
    )


def _unswappable(exc: BaseException) -> bool:
    """torch's ``nn.Module._apply`` swaps a fake layer's weights (``torch.utils.swap_tensors``),
    which fails where the fake-tensor memo holds a weakref to them: a layer made and moved inside
    the forward (``nn.LayerNorm(x.shape[1:]).to(x.device)(x)``). A limit of fake tensors in this
    torch, not the model's: the real probe runs it."""
    return (
        isinstance(exc, RuntimeError)
        and str(exc).startswith("_apply(): Couldn't swap")
        and "weakref" in str(exc.__cause__)
    )


def _probe_file(filename: str) -> bool:
    """One of the probe's own files (probe.py, _probe/*.py, _fake/*.py): not the package's demo
    models, whose forwards are the model's code like any user's."""
    path = os.path.abspath(filename)
    return path.startswith(_PROBE_DIRS) or path == _PACKAGE_DIR + "probe.py"


def _call_out_codes(caller: types.CodeType) -> tuple[types.CodeType, ...]:
    """torchxray's frames that call the model or torch on the model's data: an exception raised
    there by a C function (an argument mismatch, an aten error) belongs to the model."""
    from .._fake.memo import call_out_codes
    from .inputs import prepare_inputs
    from .wrap import Patches

    return (
        RECORDED_CODE,
        inner_code(Patches._record_instance, "unbound"),
        *call_out_codes(),
        caller,
        prepare_inputs.__code__,
    )


def _own_error(exc: BaseException, caller: types.CodeType) -> str:
    """A hint for an exception raised by the probe's own code rather than by the model or torch (a
    bug, or a torch release it does not support); "" otherwise. RuntimeError and its subclasses
    (torch's shape, device and out-of-memory errors) are never counted as the probe's, so a bug of
    ours that surfaces as one still gets the ordinary hint. Errors torch raises in an operator end
    in torch's own frames (``OpOverload.__call__``), so the FLOP counter needs no exemption."""
    tb = exc.__traceback__
    if tb is None or isinstance(exc, RuntimeError):
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    if not _probe_file(code.co_filename):
        return ""
    if code in _call_out_codes(caller):
        return ""
    where = f"{os.path.relpath(code.co_filename, _PACKAGE_DIR)}:{tb.tb_lineno} ({code.co_name})"
    return (
        f"raised inside torchxray ({where}), not by the model: please report it with this "
        f"message and your torch version ({torch.__version__})"
    )


def _type_name(exc: BaseException) -> str:
    cls = type(exc)
    return (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )


def _message(exc: BaseException, op: str | None) -> str:
    """The exception's text; where a fake run stopped at an op that needs values (``op``, from
    `data_dependent_op`), that op named instead of torch's internal words."""
    text = str(exc).strip() or type(exc).__name__
    if op is not None:
        text = (
            f"fake tensors cannot run {op_text(op)}: its result depends on tensor values, which "
            "fake tensors do not hold" + ("" if op else f" ({text})")
        )
    return short(text, 2000)


def _special_hint(
    exc: BaseException, mode: str, device: torch.device, path: str, training: bool
) -> str:
    """Causes that hold whatever the inputs and patches: fake tensors, memory, meta; or ""."""
    from torch._subclasses import fake_tensor as ft

    where = repr(path) if path else "the model's own forward"
    if mode == "fake" and data_dependent_op(exc) is not None:
        # A train-mode forward often decides on values only while training (LayerDrop's
        # random skip, a loss over matched targets): its eval path may well run fake.
        also = (
            "; or call model.eval() first if its inference path is what you want to see (some "
            "modules decide on values only while training, e.g. LayerDrop)"
            if training
            else ""
        )
        if device.type == "meta":
            return (
                "the model is on the meta device and holds no values, so no probe can run this "
                f"op: build it on the CPU (or load its weights) and probe it with mode='real'{also}"
            )
        return (
            "run tx.probe(model, ..., mode='real'): it runs the forward for real where the model "
            f"lives (the records up to {where} are kept here){also}"
        )
    if mode == "fake" and isinstance(exc, ft.UnsupportedOperatorException):
        return (
            f"this op has no fake (meta) kernel, so fake tensors cannot run it; probe with "
            f"mode='real' on a model that holds real weights: {exc}"
        )
    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return "out of memory in this module; probe with mode='fake' (no memory) or smaller inputs"
    if device.type == "meta" and mode == "real":
        return "the model is on the meta device and holds no values; use mode='fake'"
    return ""


_DTYPE_REFUSAL = re.compile(
    r"expected .*?\bto be (?:an? )?(?P<want>[A-Za-z0-9]+(?: or [A-Za-z0-9 ]+?)?)(?: matrix)?,"
    r" got (?:torch\.)?(?P<got>\w+)|not implemented for '(?P<unimpl>\w+)'",
    re.IGNORECASE,
)


def _dtype_hint(
    exc: BaseException, mode: str, device: torch.device, inner: nn.Module | None
) -> str:
    """A kernel that refuses a dtype on fake or meta tensors (a meta kernel often mirrors the
    CUDA kernel's dtype checks, whatever the device): name the dtypes and the cure; or ""."""
    if mode != "fake" and device.type != "meta":
        return ""
    found = _DTYPE_REFUSAL.search(str(exc))
    if found is None:
        return ""
    got = found.group("got") or found.group("unimpl")
    want = (found.group("want") or "").replace("supported ", "").strip()
    held = (
        sorted({str(p.dtype).removeprefix("torch.") for p in inner.parameters()}) if inner else []
    )
    weights = f"; this module's weights are {', '.join(held)}" if held else ""
    wanted = f" (it takes {want})" if want else ""
    return (
        f"the kernel refuses {got} on fake and meta tensors{wanted}{weights}: build or cast the "
        "model in a dtype it takes (model.to(torch.bfloat16), or transformers' "
        "dtype=torch.bfloat16) to probe it here, or probe a copy holding real weights on the "
        "CPU with mode='real'"
    )


def _input_hint(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, TypeError) and ("argument" in text or "positional" in text):
        return "check the number and names of the example inputs against this forward's signature"
    lowered = text.lower()
    if "dtype" in lowered or "scalar type" in lowered:
        return "check the example inputs' dtypes: this module expects a different dtype"
    if "device" in lowered:
        return "inputs and parameters are on different devices inside this module"
    if any(word in lowered for word in ("shape", "size", "dim", "mat1", "match")):
        return "check the example inputs' shapes: they do not fit this module"
    return "check that the example inputs (shapes, dtypes, count) fit what this module expects"
