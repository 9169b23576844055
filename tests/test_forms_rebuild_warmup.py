"""The first form of a process is the form every later call gives (``_forms/rebuild/warmup.py``): torch's
one-time meta warm-up (1.8 s of CPU here) once ran inside the first form's budget, which then
refused a model the same form found exact a moment later. A fresh interpreter, a zoo model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import warnings
warnings.simplefilter("ignore")
import torchxray as tx
from zoo import blocks as B
m = B.TinyViT()
first = tx.form(m)
second = tx.form(m)
print(repr(first.inexact), repr(second.inexact), [x.value for x in first.fields] == [x.value for x in second.fields])
"""


def test_the_first_form_of_a_process_is_the_same_as_the_next() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["''", "''", "True"]
