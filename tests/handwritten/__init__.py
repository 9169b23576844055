"""Hand-written models, as a paper's or a course's code is written (issue 58, item 4).

`CASES` (name -> `case.Case`) holds every model of the package's modules; each builds small on
the CPU with random weights and comes with example inputs and one edit that keeps its shapes.
The harness that runs torchxray on them is `bench.sweep.handwritten` (`python -m bench.sweep
--family handwritten`); `tests/test_handwritten.py` runs a sample.
"""

from . import (  # noqa: F401  (each module fills CASES)
    activations,
    attention,
    builders,
    calling,
    classifiers,
    convnets,
    dictconfigs,
    encoders,
    flagged_layers,
    generative,
    geometry,
    lookups,
    misc,
    multimodal,
    routing,
    scans,
    sequence,
    signals,
    styles2,
    styles3,
    styles4,
    styles5,
    styles6_r5a,
    styles6_r5b,
    styles7_lead,
    styles7_r6a,
    styles7_r6b,
    styles8_r7a,
    styles8_r7b,
)
from .case import CASES, Case

__all__ = ["CASES", "Case"]
