"""What a scan of the live objects finds around a module (stage 2, ``_forms/sources/scan.py``):
a module's place in its parent, past what the process's gc also holds: a dead
``weakref.proxy`` (reading its ``__class__`` raises ``ReferenceError``) is not a module, and a
form that scans opens as without it (it raised, after tests that left such proxies behind)."""

from __future__ import annotations

import gc
import weakref

from torch import nn

import torchxray as tx
from torchxray._forms.sources.position import ordinals


class Gone:
    pass


class Stage(nn.Module):
    def __init__(self, width: int = 4, stage_idx: int = 0) -> None:
        super().__init__()
        self.fc = nn.Linear(width, width)


def test_a_dead_proxy_among_the_live_objects_is_no_module() -> None:
    obj = Gone()
    held = [weakref.proxy(obj)]
    del obj
    gc.collect()
    model = nn.Sequential(Stage(), Stage())
    assert ordinals(model[1])[0] == 1  # its place, found by the scan
    assert tx.form(model[1]).inexact == ""
    assert held  # the proxy lived through the scan
