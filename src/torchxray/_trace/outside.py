"""Writes a run cannot put back: files opened for writing, removed or renamed.

While a run watches, the functions that write files (``open`` / ``io.open`` with a writing
mode, ``os.open`` with a writing flag, ``os.remove``, ``os.unlink``, ``os.rename``,
``os.replace``) are wrapped: a call from a watching thread is noted, every call goes on as it
would. The wrappers are put in place when the first run starts watching and taken away when the
last one stops, so nothing of them stays between runs. Not an audit hook (PEP 578): one can never
be removed, and CPython raises an audit event for every ``id()`` call, 14,000 in a probe of the
Llama-70B architecture: a hook cost every later probe, and all other code, about 8%.
"""

from __future__ import annotations

import builtins
import io
import os
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["Files"]

_WATCHING: dict[int, list[str]] = {}
_LOCK = threading.Lock()
_SAVED: list[tuple[Any, str, Any]] = []
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


def _note(text: str) -> None:
    seen = _WATCHING.get(threading.get_ident())
    if seen is not None:
        seen.append(text)


def _cache_file(path: Any) -> bool:
    text = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else ""
    return not text or "__pycache__" in text or text.endswith(".pyc")


def _opener(fn: Callable[..., Any]) -> Callable[..., Any]:
    def open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:  # noqa: A001
        if _WATCHING and isinstance(mode, str) and any(c in mode for c in "wax+"):
            if not _cache_file(file):
                _note(f"opened {os.fsdecode(file)} for writing")
        return fn(file, mode, *args, **kwargs)

    return open


def _os_open(fn: Callable[..., Any]) -> Callable[..., Any]:
    def open(path: Any, flags: int, *args: Any, **kwargs: Any) -> Any:  # noqa: A001
        if _WATCHING and flags & _WRITE_FLAGS and not _cache_file(path):
            _note(f"opened {os.fsdecode(path)} for writing")
        return fn(path, flags, *args, **kwargs)

    return open


def _changer(verb: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def change(path: Any, *args: Any, **kwargs: Any) -> Any:
        if _WATCHING and not _cache_file(path):
            _note(f"{verb} {os.fsdecode(path)}")
        return fn(path, *args, **kwargs)

    return change


def _install() -> None:
    targets = [
        (builtins, "open", _opener),
        (io, "open", _opener),
        (os, "open", _os_open),
        (os, "remove", lambda fn: _changer("remove", fn)),
        (os, "unlink", lambda fn: _changer("remove", fn)),
        (os, "rename", lambda fn: _changer("rename", fn)),
        (os, "replace", lambda fn: _changer("rename", fn)),
    ]
    for module, name, make in targets:
        fn = getattr(module, name)
        _SAVED.append((module, name, fn))
        setattr(module, name, make(fn))


def _uninstall() -> None:
    while _SAVED:
        module, name, fn = _SAVED.pop()
        setattr(module, name, fn)


class Files:
    """While entered, this thread's file writes are collected in `seen`."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self._in = False

    def __enter__(self) -> Files:
        with _LOCK:
            if not _WATCHING:
                _install()
            _WATCHING[threading.get_ident()] = self.seen
            self._in = True
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._in:
            return
        with _LOCK:
            _WATCHING.pop(threading.get_ident(), None)
            self._in = False
            if not _WATCHING:
                _uninstall()
