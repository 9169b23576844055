"""Source code of modules, classes and functions, with fallbacks for where Python keeps none.

``source(obj)`` never raises for a supported object that merely lacks source: it returns a
``Source`` with ``text=None`` and a human ``reason`` (built-ins, C extensions, TorchScript,
classes made with ``type()``, code run through ``exec``).

Classes defined in a notebook cell are the common hard case: ``inspect.getsource`` looks for the
file of ``sys.modules["__main__"]``, which a Jupyter kernel does not have. IPython, however, keeps
every cell's code in ``linecache`` (under ``<ipython-input-…>`` or ``/tmp/ipykernel_…/….py``) and in
its input history, so we parse those and look for the ``class`` statement ourselves.

    >>> import torch.nn as nn
    >>> src = source(nn.Linear(2, 3))
    >>> src.text.lstrip().startswith("class Linear")
    True
    >>> src.forward_lines[0] > src.line
    True
"""

from __future__ import annotations

import ast
import functools
import importlib.machinery
import inspect
import os
import sys
import textwrap
import types
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ._signature import original
from ._source.cells import Cell, cell_label, find_in_cells, notebook_cells
from ._source.defs import first_line, is_func, own_code
from ._text import short_repr
from ._unwrap import compiled_inner, original_class

__all__ = ["Cell", "Source", "notebook_cells", "source"]


@dataclass(frozen=True)
class Source:
    """Where an object's code lives. Line numbers are 1-based and absolute within ``file``.

    Attributes:
        text: The code of the class or function, or None when Python keeps none.
        file: The file it is in (a notebook cell's file name in a kernel), or None.
        line: The first line of `text` in `file`.
        reason: Why there is no `text` (built-in, C extension, class made with `type()`...).
        qualname: The object's module and qualified name, e.g. ``torch.nn.modules.linear.Linear``.
        forward_lines: First and last line of the `forward` the class uses, when it has one.
        forward_owner: The class (``"pkg.mod.Class"``) whose own `forward` that is.
        end_line: The last line of `text` in `file`.
        kind: ``"class"`` or ``"function"``.
        cell: ``"In [3]"`` when the text came from a notebook cell.
        note: A remark on what is shown, e.g. the original class of a parametrized module.
        script_code: TorchScript's own code (`.code`) when there is no Python source.

    Examples:
        >>> import torch.nn as nn
        >>> src = source(nn.ReLU())
        >>> src.kind, src.qualname, src.reason
        ('class', 'torch.nn.modules.activation.ReLU', None)
    """

    text: str | None
    file: str | None
    line: int | None
    reason: str | None
    qualname: str
    forward_lines: tuple[int, int] | None = None
    forward_owner: str | None = None  # "pkg.mod.Class" whose own ``forward`` the class uses
    end_line: int | None = None
    kind: str = "class"  # "class" or "function"
    cell: str | None = None  # "In [3]" when the text came from a notebook cell
    note: str | None = None  # e.g. "showing the original class of a parametrized module"
    script_code: str | None = None  # TorchScript's own code (``.code``) when there is no Python


# What inspect raises when there is no source; SyntaxError/IndexError when a file changed on disk
# after import, so that the source inspect parses no longer matches the code objects.
_NO_SOURCE = (OSError, TypeError, SyntaxError, IndexError)

_C_CALLABLES = (
    types.BuiltinFunctionType,
    types.WrapperDescriptorType,
    types.MethodWrapperType,
    types.MethodDescriptorType,
    types.ClassMethodDescriptorType,
    types.GetSetDescriptorType,
    types.MemberDescriptorType,
)


def source(obj: Any, *, cells: Iterable[Cell | tuple[str | None, str]] | None = None) -> Source:
    """Return the source of a module instance (its class), class, function or method.

    Never raises for an object that merely has no source: the `Source` then has ``text=None`` and
    a `reason` in words. Classes defined in a notebook cell are found in the kernel's cells.

    Args:
        obj: An `nn.Module` instance (its class's source is shown), a class, a function or a
            method. TorchScript modules show their scripted code, `torch.fx` graph modules their
            generated code.
        cells: Where to look for notebook cell code (newest first), as `Cell` records or
            ``(name, code)`` pairs; by default the running IPython's cells.

    Returns:
        The `Source`: text, file and line numbers, or the reason there is none.

    Raises:
        TypeError: `obj` is none of the above (a number, a tensor...).

    Examples:
        >>> import torch.nn as nn
        >>> src = source(nn.Linear(2, 3))
        >>> src.text.splitlines()[0]
        'class Linear(Module):'
        >>> source(len).reason
        'len is implemented in C (a built-in); it has no Python source.'
    """
    note = None
    if isinstance(obj, torch.jit.ScriptModule):
        return _script_source(obj, _script_name(obj))
    if isinstance(obj, torch.jit.ScriptFunction):
        return _script_source(obj, getattr(obj, "name", "function"))
    if isinstance(obj, torch.fx.GraphModule) and "forward" in vars(type(obj)):
        return _graph_module_source(obj)
    if isinstance(obj, nn.Module):
        inner = compiled_inner(obj)
        if inner is not None:
            obj, note = inner, "torch.compile wrapper; showing the compiled module's class"
        obj = type(obj)
    if isinstance(obj, type):
        cls = original_class(obj)
        if cls is not obj:
            note = note or f"parametrized module; showing its original class {cls.__qualname__}"
        return _class_source(cls, cells, note)
    func, note = _unwrap_callable(obj)
    if func is not None:
        return _function_source(func, cells, note)
    if isinstance(obj, _C_CALLABLES):
        name = getattr(obj, "__qualname__", getattr(obj, "__name__", repr(obj)))
        return Source(
            text=None,
            file=None,
            line=None,
            reason=f"{name} is implemented in C (a built-in); it has no Python source.",
            qualname=_dotted(getattr(obj, "__module__", None), name),
            kind="function",
        )
    raise TypeError(
        "source() expects an nn.Module instance, a class, a function or a method; got "
        f"{type(obj).__name__} ({short_repr(obj)}). For another object, pass its class: "
        "source(type(x))."
    )


# --- classes -----------------------------------------------------------------------------------


def _class_source(cls: type, cells: Iterable[Any] | None, note: str | None) -> Source:
    qualname = _dotted(cls.__module__, cls.__qualname__)
    owner = next((c for c in cls.__mro__ if "forward" in vars(c)), None)
    owner_name = _dotted(owner.__module__, owner.__qualname__) if owner else None
    if cls.__module__ != "builtins":
        found = _inspect_class(cls) or find_in_cells(cls, cells)
        if found is not None:
            text, file, first, cell = found
            if cell is None and file is not None:  # inspect found it (Python 3.13 does in cells)
                cell = cell_label(file)
            lines = _forward_lines(cls, text, first, file)
            end = first + len(text.splitlines()) - 1
            return Source(
                text,
                file,
                first,
                None,
                qualname,
                forward_lines=lines,
                forward_owner=owner_name,
                end_line=end,
                cell=cell,
                note=note,
            )
    reason = _class_reason(cls)
    return Source(None, None, None, reason, qualname, forward_owner=owner_name, note=note)


def _inspect_class(cls: type) -> tuple[str, str | None, int, None] | None:
    try:
        lines, first = inspect.getsourcelines(cls)
        file = inspect.getsourcefile(cls)
    except _NO_SOURCE:
        return None
    # Python < 3.13 finds a class by qualname only; a ``type()`` class sharing a name with a real
    # one would get the wrong text, so check that the class's own methods lie inside it.
    last = first + len(lines) - 1
    for code_file, line in own_code(cls):
        if code_file == file and not first <= line <= last:
            return None
    return "".join(lines), file, first, None


def _class_reason(cls: type) -> str:
    name = cls.__qualname__
    if cls.__module__ == "builtins":
        return f"{name} is a built-in class implemented in C; it has no Python source."
    module = sys.modules.get(cls.__module__)
    file = getattr(module, "__file__", None)
    compiled = not cls.__flags__ & (1 << 9) or any(  # Py_TPFLAGS_HEAPTYPE: set unless static C
        b.__module__ == "pybind11_builtins" for b in cls.__mro__
    )
    if compiled or (file and file.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))):
        where = f" ({os.path.basename(file)})" if file else ""
        return f"{name} is implemented in a compiled extension{where}; it has no Python source."
    code_files = [code_file for code_file, _ in own_code(cls)]
    if code_files and all(code_file == "<string>" for code_file in code_files):
        return f"class {name} was created by exec() from a string; the source was not kept."
    if not file or cls.__module__ == "__main__":
        return (
            f"class {name} was defined interactively, and no notebook cell holds a "
            f"'class {cls.__name__}' statement for it: it may have been created with type() or "
            "exec(), or its cell was cleared from the history."
        )
    if not os.path.exists(file):
        return f"the source file of {name} ({file}) is not available."
    return (
        f"class {name} was created dynamically (e.g. with type()); there is no "
        f"'class {cls.__name__}' statement in {file}."
    )


def _forward_lines(cls: type, text: str, first: int, file: str | None) -> tuple[int, int] | None:
    forward = vars(cls).get("forward")
    if forward is None:
        return None
    try:
        tree = ast.parse(textwrap.dedent(text))
    except SyntaxError:
        tree = None
    body = tree.body[0] if tree is not None and tree.body else None
    if isinstance(body, ast.ClassDef):
        defs = [n for n in body.body if is_func(n) and n.name == "forward"]  # type: ignore[attr-defined]
        if defs:
            node = defs[-1]  # the last ``def forward`` in a class body is the one that counts
            return first + first_line(node) - 1, first + (node.end_lineno or node.lineno) - 1
    # ``forward = some_function`` in the body (nn.Module does this): that function's own lines.
    code = getattr(original(forward), "__code__", None)  # through wrappers
    if code is None or file is None or code.co_filename != file:
        return None
    try:
        lines, start = inspect.getsourcelines(code)
    except _NO_SOURCE:
        return None
    return start, start + len(lines) - 1


# --- functions ---------------------------------------------------------------------------------


def _unwrap_callable(obj: Any) -> tuple[types.FunctionType | None, str | None]:
    note = None
    if isinstance(obj, functools.partial):
        obj, note = obj.func, "functools.partial; showing the wrapped function"
    if isinstance(obj, (staticmethod, classmethod, types.MethodType)):
        obj = obj.__func__
    if isinstance(obj, property) and obj.fget is not None:
        obj, note = obj.fget, "property; showing its getter"
    inner = original(obj)  # a decorator's wrapper without functools.wraps: what it wraps
    if inner is not obj and isinstance(inner, types.FunctionType):
        what = getattr(obj, "__qualname__", type(obj).__name__)
        obj, note = inner, f"{what} wraps {inner.__qualname__}; showing the wrapped function"
    return (obj, note) if isinstance(obj, types.FunctionType) else (None, None)


def _function_source(
    func: types.FunctionType, cells: Iterable[Any] | None, note: str | None
) -> Source:
    qualname = _dotted(func.__module__, func.__qualname__)
    found: tuple[str, str | None, int, str | None] | None = None
    try:
        lines, first = inspect.getsourcelines(func)
        found = (
            "".join(lines),
            inspect.getsourcefile(func) or func.__code__.co_filename,
            first,
            None,
        )
    except _NO_SOURCE:
        if func.__name__ != "<lambda>":
            found = find_in_cells(func, cells)
    if found is None:
        origin = original(func).__code__.co_filename
        reason = (
            f"{func.__qualname__} was created by exec()/eval() from a string; no source was kept."
            if origin.startswith("<")
            else f"the source of {func.__qualname__} ({origin}) is not available."
        )
        return Source(None, None, None, reason, qualname, kind="function", note=note)
    text, file, first, cell = found
    end = first + len(text.splitlines()) - 1
    return Source(
        text, file, first, None, qualname, end_line=end, kind="function", cell=cell, note=note
    )


def _script_source(obj: Any, name: str) -> Source:
    what = "ScriptModule" if isinstance(obj, torch.jit.ScriptModule) else "ScriptFunction"
    try:
        code = obj.code
    except (AttributeError, RuntimeError):  # a ScriptModule without a forward has no .code
        code = None
    shown = " Its TorchScript code is in script_code." if code else ""
    return Source(
        text=None,
        file=None,
        line=None,
        reason=f"{name} is a compiled TorchScript {what}; its Python source was not kept.{shown}",
        qualname=name if "." in name else _dotted(type(obj).__module__, name),
        kind="class" if what == "ScriptModule" else "function",
        script_code=code,
    )


def _graph_module_source(module: torch.fx.GraphModule) -> Source:
    # fx generates a class per instance and compiles its forward from a string that it registers
    # in linecache; that generated forward is the only source the module has.
    cls = type(module)
    found = _function_source(vars(cls)["forward"], None, None)
    if found.text is None or found.line is None or found.end_line is None:
        return found
    return Source(
        found.text,
        found.file,
        found.line,
        None,
        _dotted(cls.__module__, cls.__qualname__),
        forward_lines=(found.line, found.end_line),
        forward_owner=_dotted(cls.__module__, cls.__qualname__),
        end_line=found.end_line,
        note="torch.fx GraphModule: its class is generated; showing the generated forward",
    )


def _script_name(module: Any) -> str:
    try:  # e.g. "__torch__.mypkg.Net": TorchScript's name for the scripted class
        return str(module._c._type().qualified_name())
    except (AttributeError, RuntimeError):
        return str(getattr(module, "original_name", type(module).__name__))


def _dotted(module: str | None, qualname: str) -> str:
    return f"{module}.{qualname}" if module else qualname
