"""One line describing the machine a run measured: CPU, cores, memory, GPU, Python and torch.

A module of its own: both `python -m bench` and `python -m bench.browser` stamp their figures
with it, and neither imports the other.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

import torch


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
        mem_text = f", {mem:.0f} GiB RAM"
    except (ValueError, OSError, AttributeError):
        mem_text = ""
    gpu = f", {torch.cuda.get_device_name()}" if torch.cuda.is_available() else ", no GPU"
    return (
        f"{cpu}, {os.cpu_count()} CPUs (torch threads {torch.get_num_threads()}){mem_text}{gpu}; "
        f"Python {platform.python_version()}, torch {torch.__version__}, {platform.system()}"
    )
