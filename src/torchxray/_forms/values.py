"""Field values as UI text and back: ``to_text(kind, value)`` and ``parse(kind, text)``.

Strings are read with ``ast.literal_eval`` or plain constructors (``int``, ``float``,
``torch.device``); nothing is ever ``eval``'ed. Callables and classes are looked up by label among
offered choices or by a dotted name resolved with ``getattr`` from an already imported package.
"""

from __future__ import annotations

import ast
import enum
import sys
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812

from .._text import short_repr

__all__ = [
    "CALLABLE_CHOICES",
    "CLASS_CHOICES",
    "ParseError",
    "callable_label",
    "loose",
    "parse",
    "same",
    "same_value",
    "to_text",
]


class ParseError(ValueError):
    """Text that does not read as the field's kind; the message says what was expected."""


_ACTIVATION_FNS = (
    "relu",
    "gelu",
    "silu",
    "tanh",
    "sigmoid",
    "elu",
    "leaky_relu",
    "mish",
    "hardswish",
    "selu",
    "softplus",
    "relu6",
)
CALLABLE_CHOICES: dict[str, Any] = {
    f"torch.nn.functional.{n}": getattr(F, n) for n in _ACTIVATION_FNS
}
CALLABLE_CHOICES.update({"torch.tanh": torch.tanh, "torch.sigmoid": torch.sigmoid})

_CLASS_NAMES = (
    "ReLU",
    "GELU",
    "SiLU",
    "Tanh",
    "Sigmoid",
    "ELU",
    "LeakyReLU",
    "Mish",
    "Hardswish",
    "ReLU6",
    "Identity",
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "LayerNorm",
    "GroupNorm",
    "InstanceNorm2d",
    "RMSNorm",
)
# hasattr: a class the running torch lacks is left out instead of failing the import (all of
# these exist from torch 2.4, the floor in pyproject; RMSNorm is the newest).
CLASS_CHOICES: dict[str, type] = {
    f"torch.nn.{n}": getattr(torch.nn, n) for n in _CLASS_NAMES if hasattr(torch.nn, n)
}

_EXPECTED = {
    "int": "an integer",
    "float": "a number",
    "bool": "True or False",
    "str": "a string",
    "choice": "one of the offered options",
    "int_or_tuple": "an integer or a tuple of integers",
    "dtype": "a torch dtype such as torch.float16",
    "device": "a device such as 'cpu' or 'cuda:0'",
    "class": "a class",
    "callable": "a function",
    "tensor": "a tensor (nested list of numbers)",
    "literal": "a Python literal (number, string, tuple, list, dict, None)",
    "varargs": "a tuple of positional arguments",
    "varkw": "a dict of keyword arguments",
}


def expected(kind: str) -> str:
    return _EXPECTED.get(kind, kind)


def callable_label(value: Any) -> str | None:
    """Dotted name for a function or class, or None if it has none worth showing."""
    if value is None:
        return None
    for table in (CALLABLE_CHOICES, CLASS_CHOICES):
        for label, obj in table.items():
            if obj is value:
                return label
    mod = getattr(value, "__module__", None)
    qual = getattr(value, "__qualname__", None)
    if isinstance(mod, str) and isinstance(qual, str) and "<" not in qual:
        return f"{mod}.{qual}"
    return None


def resolve_dotted(text: str) -> Any:
    """Object at a dotted path inside an already imported module; attribute walk only."""
    parts = text.split(".")
    if not all(p.isidentifier() and not p.startswith("__") for p in parts):
        raise ParseError(f"{short_repr(text)} is not a dotted name")
    for cut in range(len(parts), 0, -1):
        mod = sys.modules.get(".".join(parts[:cut]))
        if mod is None:
            continue
        obj: Any = mod
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            break
        return obj
    raise ParseError(f"{short_repr(text)} names nothing in an imported module")


def to_text(kind: str, value: Any) -> str:
    """Text a UI input shows; ``parse(kind, to_text(kind, v))`` gives ``v`` back."""
    if value is None:
        return "None"
    if kind in ("str", "choice") and isinstance(value, str):
        return value
    if isinstance(value, enum.Enum):
        return value.name
    if kind == "device" or isinstance(value, torch.device):
        return str(value)
    if isinstance(value, torch.dtype):
        return str(value)
    if kind in ("callable", "class") or callable(value) and not isinstance(value, torch.nn.Module):
        label = callable_label(value)
        if label is not None:
            return label
    if isinstance(value, torch.Tensor):
        if value.numel() <= 64 and value.device.type != "meta":
            return repr(value.tolist())
        return f"<tensor shape={tuple(value.shape)} dtype={value.dtype}>"
    text = repr(value)
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _summary(value)  # not readable back anyway: a short label beats a long repr
    return text


def _summary(value: Any, limit: int = 80) -> str:
    """One-line label for values text cannot express (modules, partials, containers of them)."""

    def name(v: Any) -> str:
        if isinstance(v, torch.nn.Module):
            return type(v).__name__
        if isinstance(v, torch.Tensor):
            return f"tensor{tuple(v.shape)}"
        return callable_label(v) or type(v).__name__

    if isinstance(value, dict):
        inner = ", ".join(f"{k}={name(v)}" for k, v in value.items())
    elif isinstance(value, (tuple, list)):
        inner = ", ".join(name(v) for v in value)
    else:
        text = repr(value).replace("\n", " ")
        return f"<{text[: limit - 2]}>" if len(text) < limit else f"<{name(value)}>"
    label = f"<{type(value).__name__}: {inner}>"
    return label if len(label) <= limit else label[: limit - 4] + "...>"


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise ParseError(
            f"expected {expected('literal')}, got {short_repr(text)}{_unquoted(text)}"
        ) from None


def _int(text: str) -> int:
    try:
        v = _literal(text)
    except ParseError:
        raise ParseError(
            f"expected {expected('int')}, got {short_repr(text)}{_not_code(text)}"
        ) from None
    if type(v) is not int:
        raise ParseError(f"expected {expected('int')}, got {short_repr(text)}")
    return v


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ParseError(f"expected {expected('float')}, got {short_repr(text)}") from None


def _bool(text: str) -> bool:
    low = text.lower()
    if low in ("true", "1", "yes", "on"):
        return True
    if low in ("false", "0", "no", "off"):
        return False
    raise ParseError(f"expected {expected('bool')}, got {short_repr(text)}")


def _sizes(text: str, elem: str, none_elems: bool) -> Any:
    raw = text if text.startswith(("(", "[")) or "," not in text else f"({text})"
    v = _literal(raw) if elem != "int" else _literal_or(raw, "int_or_tuple")
    scalar = int if elem == "int" else (int, float)
    if isinstance(v, scalar) and not isinstance(v, bool):
        return v
    if isinstance(v, (tuple, list)) and all(
        (isinstance(e, scalar) and not isinstance(e, bool)) or (none_elems and e is None) for e in v
    ):
        return v
    raise ParseError(
        f"expected {expected('int_or_tuple')}, got {short_repr(text)}{_not_code(text)}"
    )


def _literal_or(text: str, kind: str) -> Any:
    try:
        return _literal(text)
    except ParseError:
        raise ParseError(
            f"expected {expected(kind)}, got {short_repr(text)}{_not_code(text)}"
        ) from None


def _not_code(text: str) -> str:
    """Extra hint when the text looks like code someone hoped would run."""
    if "(" in text and any(c.isalpha() for c in text.split("(", 1)[0]) or "__" in text:
        return " (only literals are read; expressions and calls are never evaluated)"
    return ""


def _unquoted(text: str) -> str:
    """Extra hint for a word where a literal was expected: a field of unknown kind reads its text
    as a Python literal, so ``zero`` is a name, not the string ``'zero'``."""
    word = text.strip()
    if word.isidentifier():
        return f" (its text is read as a Python literal: write a string in quotes, {word!r})"
    return _not_code(text)


def _dtype(text: str) -> torch.dtype:
    name = text.removeprefix("torch.")
    obj = getattr(torch, name, None) if name.isidentifier() else None
    if not isinstance(obj, torch.dtype):
        raise ParseError(f"expected {expected('dtype')}, got {short_repr(text)}")
    return obj


def _device(text: str) -> torch.device:
    try:
        return torch.device(text.strip("'\""))
    except (RuntimeError, ValueError, TypeError):
        raise ParseError(f"expected {expected('device')}, got {short_repr(text)}") from None


def _callable(text: str, kind: str, choices: tuple[str, ...]) -> Any:
    table: dict[str, Any] = CALLABLE_CHOICES if kind == "callable" else CLASS_CHOICES
    if text in table:
        return table[text]
    for label, obj in table.items():
        if label.rsplit(".", 1)[-1] == text:
            return obj
    if text in choices:
        return resolve_dotted(text)
    top = text.split(".", 1)[0]
    if top not in ("torch", "torchvision", "timm", "transformers"):
        raise ParseError(
            f"expected {expected(kind)} (one of {', '.join(choices[:6])}, ...), got {short_repr(text)}"
        )
    obj = resolve_dotted(text)
    if kind == "class" and not isinstance(obj, type) or not callable(obj):
        raise ParseError(f"expected {expected(kind)}, got {short_repr(text)}")
    return obj


def parse(
    kind: str,
    text: str,
    *,
    optional: bool = False,
    choices: tuple[str, ...] = (),
    elem: str = "int",
    none_elems: bool = False,
    enum_cls: Any = None,
) -> Any:
    """Read UI text as a value of `kind`; raises ParseError saying what was expected."""
    text = text.strip()
    if optional and text in ("None", "none", ""):
        return None
    if kind == "str":
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            return _literal(text)
        return text
    if kind == "choice":
        bare = text.strip("'\"")
        if choices and bare not in choices:
            raise ParseError(f"expected one of {', '.join(choices)}, got {short_repr(text)}")
        if enum_cls is not None:
            return enum_cls[bare]
        return bare
    if kind == "int":
        return _int(text)
    if kind == "float":
        return _float(text)
    if kind == "bool":
        return _bool(text)
    if kind == "int_or_tuple":
        if text.strip("'\"") in choices:
            return text.strip("'\"")
        return _sizes(text, elem, none_elems)
    if kind == "dtype":
        return _dtype(text)
    if kind == "device":
        return _device(text)
    if kind in ("callable", "class"):
        return _callable(text.strip("'\""), kind, choices)
    if kind == "tensor":
        v = _literal_or(text, kind)
        try:
            return torch.tensor(v)
        except (TypeError, ValueError, RuntimeError):
            raise ParseError(f"expected {expected(kind)}, got {short_repr(text)}") from None
    if kind == "varargs":
        v = _literal_or(text, kind)
        if not isinstance(v, (tuple, list)):
            raise ParseError(f"expected {expected(kind)}, got {short_repr(text)}")
        return tuple(v)
    if kind == "varkw":
        v = _literal_or(text, kind)
        if not isinstance(v, dict) or not all(isinstance(k, str) for k in v):
            raise ParseError(f"expected {expected(kind)}, got {short_repr(text)}")
        return v
    return _literal(text)


def loose(raw: Any) -> Any:
    """A **kwargs value from a UI: a literal if it reads as one, else the string itself."""
    if not isinstance(raw, str):
        return raw
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return raw


def same(a: Any, b: Any) -> bool:
    """The same value: the object itself, or an equal plain value of the same type (a module, a
    tensor or a config is the same only as the object itself)."""
    if a is b:
        return True
    if isinstance(a, (bool, int, float, str, tuple, type(None))) and type(a) is type(b):
        try:
            return bool(a == b)
        except Exception:  # noqa: BLE001
            return False
    return False


def same_value(a: Any, b: Any) -> bool:
    """The object itself, or an equal value of the same type (the search's test of a candidate
    it already holds)."""
    return a is b or type(a) is type(b) and _eq(a, b)


def _eq(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return a is b
