"""The rebuild search's tuning constants, in one place, each with why (``_forms/infer.py`` runs
the search, ``_forms/rules/`` proposes its changes, ``_forms/candidates.py`` its per-field values).

They were set on the forms sweep (``bench/forms_sweep.py``): a change here moves its figures, so
measure it there, the whole sweep, before and after.
"""

from __future__ import annotations

# Time. A form opens in <= 1 s of CPU: the search has this much of the thread's CPU time (the gate
# and the fields take the rest). On a loaded machine it does the same work, only slower.
SEARCH_SECONDS = 0.8
# A child's form (a factory for a parent's field) may build past the parent's search deadline by
# this much, at most: the parent's own form stays within its limit.
CHILD_SLACK = 0.05
# A build begun just before the deadline may finish past it by this much: the form's second (the
# search's 0.8 s, this, the gate's sentence and the fields) holds on a loaded machine too.
LAST_BUILD_SLACK = 0.05
# A build past SLOW_FACTOR times the slowest build before (and past SLOW_FLOOR seconds) is
# stopped: such a candidate is wrong anyway (a side tried as a multiple loops over a grid's pairs
# of points).
SLOW_FACTOR, SLOW_FLOOR = 8.0, 0.05
# A candidate that builds a module many times the live one's size is wrong anyway: a build is cut
# past SIZE_FACTOR * (the live module's parts) + SIZE_FLOOR submodules and tensors.
SIZE_FACTOR, SIZE_FLOOR = 4, 64

# The search's shape. Proposals tried from one build's differences before the per-field candidates:
# the first differences name the likeliest changes, and each try costs a build.
GUIDED_TRIES = 16
# Proposals tried after the first that scores better, for the best of them: the first may move a
# width another field derives (in_chs where transformer_dim was meant), a step from the exact one.
BETTER_LOOKS = 3
# A proposal that fixes one part and breaks others (kernel_size 3 then needs padding 0) scores no
# better: the proposals of its own build are tried on top of it, for the few closest such (at most
# FLAT_MARGIN parts worse, FLAT_LOOKS of them), FLAT_TRIES each.
FLAT_LOOKS, FLAT_TRIES, FLAT_MARGIN = 2, 8, 2

# The rules' bounds. Proposals one rule reads off one difference's numbers or entries, at most: a
# long text (a config record) would otherwise spend the guided tries on one difference.
MAX_PER_DIFF = 24
# Moves of several fields together (``rules/derived_widths.py``) for the first differences only:
# they are many, and a later difference is mostly one the first ones cause.
FIRST_DIFFS_MOVED = 4
# Factories tried for a field not named like the layer's class (``rules/factories.py``): each
# costs a child form.
MAX_UNNAMED_FACTORIES = 3
# Candidate values per field (``_forms/candidates.py``), likeliest first: the search tries them
# one build each when the proposals are spent.
MAX_CANDIDATES = 10
