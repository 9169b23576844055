"""Writes a run cannot put back: files opened for writing, removed or renamed, seen through one
audit hook (``sys.addaudithook``, PEP 578: the interpreter's own record of these events, for
any code, C included). An audit hook cannot be removed: it is added once, at the first run, and
returns at once while no run of this thread is watching."""

from __future__ import annotations

import sys
import threading
from typing import Any

__all__ = ["Files"]

_WATCHING: dict[int, list[str]] = {}
_INSTALLED = False
_LOCK = threading.Lock()


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _WATCHING:
        return
    seen = _WATCHING.get(threading.get_ident())
    if seen is None:
        return
    path = args[0] if args else None
    if not isinstance(path, (str, bytes)) or _cache_file(path):
        return  # an open file descriptor, or Python's own bytecode cache
    if event == "open":
        mode = args[1] if len(args) > 1 else None
        if isinstance(mode, str) and any(c in mode for c in "wax+"):
            seen.append(f"opened {path!s} for writing")
    elif event in ("os.remove", "os.rename", "os.truncate", "shutil.rmtree"):
        seen.append(f"{event.split('.')[-1]} {path!s}")


def _cache_file(path: str | bytes) -> bool:
    text = path.decode(errors="replace") if isinstance(path, bytes) else path
    return "__pycache__" in text or text.endswith(".pyc")


class Files:
    """While entered, this thread's file writes are collected in `seen`."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __enter__(self) -> Files:
        global _INSTALLED
        with _LOCK:
            if not _INSTALLED:
                sys.addaudithook(_audit)
                _INSTALLED = True
        _WATCHING[threading.get_ident()] = self.seen
        return self

    def __exit__(self, *exc: object) -> None:
        _WATCHING.pop(threading.get_ident(), None)
