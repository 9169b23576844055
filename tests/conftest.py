"""Shared pytest setup: makes `fixtures.models` importable from every test file."""

from __future__ import annotations

import sys
from pathlib import Path

# pytest's default "prepend" import mode already puts tests/ on sys.path for rootdir-less runs;
# do it explicitly so `from fixtures.models import ...` works however pytest is invoked.
_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
