"""What "the model is untouched" means, as a comparable fingerprint.

`state_fingerprint(model)` captures everything an inspection step must not change: which module
object sits at which path (and its class and attribute names, so a leftover attribute shows up), a
hash of every parameter and buffer (data, requires_grad, dtype, device, shape), train/eval flags,
every hook dict of every module, torch's global module hooks, and the ``__call__`` /
``_call_impl`` / ``forward`` each class in the model runs (a probe gives modules an instance
``_call_impl`` while it runs: a leftover shows in the attribute names).
`assert_untouched(before, model)` compares and names the first differences instead of printing two huge blobs.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn as nn
from torch.nn.modules import module as _module_mod

# Per-module hook dicts that nn.Module keeps; names differ a little across torch versions, so
# only the ones present are read.
_HOOK_DICTS = (
    "_forward_hooks",
    "_forward_pre_hooks",
    "_backward_hooks",
    "_backward_pre_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_pre_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_state_dict_hooks",
    "_state_dict_pre_hooks",
    "_load_state_dict_pre_hooks",
    "_load_state_dict_post_hooks",
)
_GLOBAL_HOOK_DICTS = (
    "_global_forward_hooks",
    "_global_forward_pre_hooks",
    "_global_backward_hooks",
    "_global_backward_pre_hooks",
    "_global_forward_hooks_always_called",
    "_global_forward_hooks_with_kwargs",
    "_global_module_registration_hooks",
    "_global_parameter_registration_hooks",
    "_global_buffer_registration_hooks",
)


def tensor_digest(t: torch.Tensor) -> str:
    """Hash of a tensor's identity-free content: dtype, shape, device, requires_grad and data."""
    if isinstance(t, nn.parameter.UninitializedTensorMixin):
        return f"uninitialized|{type(t).__name__}|{t.requires_grad}"
    head = f"{t.dtype}|{tuple(t.shape)}|{t.device}|{t.requires_grad}|{type(t).__name__}"
    if t.device.type == "meta":
        return head + "|meta"
    flatten = getattr(type(t), "__tensor_flatten__", None)
    if flatten is not None and type(t) is not nn.Parameter:
        # A wrapper subclass (torchao's quantized weights, DTensor) holds its data in inner
        # tensors, and may implement no view op on itself: hash those.
        names, ctx = t.__tensor_flatten__()  # type: ignore[attr-defined]
        inner = ",".join(tensor_digest(getattr(t, n)) for n in names)
        return f"{head}|{ctx!r}|{inner}"
    data = t.detach()
    if data.is_quantized:
        data = data.int_repr()
    data = data.cpu().contiguous().reshape(-1)
    if data.dtype == torch.bool:
        data = data.to(torch.uint8)
    raw = data.view(torch.uint8).numpy().tobytes() if data.numel() else b""
    return head + "|" + hashlib.blake2b(raw, digest_size=16).hexdigest()


def _value_digest(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return tensor_digest(value)
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(_value_digest(v) for v in value) + ")"
    return f"{type(value).__name__}:{value!r}"


def _hooks(m: nn.Module) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    out = []
    for name in _HOOK_DICTS:
        d = getattr(m, name, None)
        if d:
            out.append((name, tuple((k, id(v)) for k, v in d.items())))
    return tuple(out)


@dataclass(frozen=True)
class Fingerprint:
    modules: tuple[tuple[str, int, str], ...]  # path (duplicates kept), id, class qualname
    attrs: tuple[tuple[str, tuple[str, ...]], ...]  # path -> sorted instance attribute names
    tensors: tuple[tuple[str, int, str], ...]  # "path.name" -> id, digest (params and buffers)
    state: tuple[tuple[str, str], ...]  # state_dict entries (catches packed/quantized state)
    training: tuple[tuple[str, bool], ...]
    hooks: tuple[tuple[str, Any], ...]
    global_hooks: tuple[tuple[str, tuple[Any, ...]], ...]
    forwards: tuple[tuple[str, Any], ...]  # instance-level forward overrides
    # nn.Module's __call__ and _call_impl, and per class in the model, the __call__, _call_impl
    # and forward its instances use
    classes: tuple[tuple[str, int, int, int], ...]


def _distinct(model: nn.Module) -> list[tuple[str, nn.Module]]:
    seen: set[int] = set()
    out = []
    for path, m in model.named_modules(remove_duplicate=False):
        if id(m) not in seen:
            seen.add(id(m))
            out.append((path, m))
    return out


def state_fingerprint(model: nn.Module) -> Fingerprint:
    """Everything an inspection step must leave exactly as it was."""
    all_paths = list(model.named_modules(remove_duplicate=False))
    distinct = _distinct(model)
    tensors = []
    for path, m in distinct:
        for kind in ("_parameters", "_buffers"):
            for name, t in getattr(m, kind, {}).items():
                key = f"{path}.{name}" if path else name
                tensors.append((key, id(t), "None" if t is None else tensor_digest(t)))
    try:
        state = tuple((k, _value_digest(v)) for k, v in model.state_dict(keep_vars=True).items())
    except Exception as exc:  # a ScriptModule or odd wrapper may refuse; record that it refused
        state = (("<state_dict raised>", type(exc).__name__),)
    return Fingerprint(
        modules=tuple(
            (p, id(m), f"{type(m).__module__}.{type(m).__qualname__}") for p, m in all_paths
        ),
        attrs=tuple((p, tuple(sorted(vars(m)))) for p, m in distinct),
        tensors=tuple(tensors),
        state=state,
        training=tuple((p, m.training) for p, m in distinct),
        hooks=tuple((p, h) for p, m in distinct if (h := _hooks(m))),
        global_hooks=tuple(
            (n, tuple(getattr(_module_mod, n, {}).keys())) for n in _GLOBAL_HOOK_DICTS
        ),
        forwards=tuple((p, id(vars(m)["forward"])) for p, m in distinct if "forward" in vars(m)),
        classes=(
            (
                "torch.nn.Module",
                id(nn.Module.__call__),
                id(nn.Module._call_impl),
                id(nn.Module.forward),
            ),
        )
        + tuple(
            (
                f"{c.__module__}.{c.__qualname__}",
                id(c.__call__),
                id(getattr(c, "_call_impl", None)),
                id(getattr(c, "forward", None)),
            )
            for c in dict.fromkeys(type(m) for _, m in distinct)
        ),
    )


def diff_fingerprints(before: Fingerprint, after: Fingerprint, limit: int = 8) -> list[str]:
    """Human-readable differences, at most `limit` per field."""
    problems: list[str] = []
    for field in before.__dataclass_fields__:
        a, b = getattr(before, field), getattr(after, field)
        if a == b:
            continue
        da, db = dict(_keyed(a)), dict(_keyed(b))
        lines = []
        for key in list(dict.fromkeys([*da, *db])):
            if da.get(key) != db.get(key):
                lines.append(
                    f"  {key!r}: {da.get(key, '<missing>')!r} -> {db.get(key, '<missing>')!r}"
                )
        if not lines:
            lines = ["  (same entries, different order)"]
        problems.append(f"{field} changed:\n" + "\n".join(lines[:limit]))
    return problems


def _keyed(rows: tuple[Any, ...]) -> list[tuple[Any, Any]]:
    # Paths can repeat in `modules` (shared modules); number repeats so each row keeps a key.
    out, count = [], {}  # type: ignore[var-annotated]
    for row in rows:
        key = row[0]
        n = count[key] = count.get(key, 0) + 1
        out.append(((key, n) if n > 1 else key, row[1:]))
    return out


def assert_untouched(before: Fingerprint, model: nn.Module, step: str = "") -> None:
    """Fail, naming what changed, unless `model` still matches the fingerprint `before`."""
    problems = diff_fingerprints(before, state_fingerprint(model))
    if problems:
        where = f" after {step}" if step else ""
        raise AssertionError(f"model changed{where}:\n" + "\n".join(problems))


def hooks_left(model: nn.Module, before: Fingerprint) -> list[str]:
    """Hooks present now that were not there in `before` (module paths or global dict names)."""
    after = state_fingerprint(model)
    old = dict(before.hooks)
    extra = [p for p, h in after.hooks if old.get(p) != h]
    extra += [
        n
        for (n, keys), (_, old_keys) in zip(after.global_hooks, before.global_hooks)
        if keys != old_keys
    ]
    return extra
