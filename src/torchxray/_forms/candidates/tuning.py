"""The rebuild search's tuning constants, in one place, each with why (``candidates/loop.py``
runs the search, ``candidates/rules/`` proposes its changes, ``_forms/sources/pools.py`` orders
each field's candidates). The form's whole budget (``SEARCH_WORK``) and its safety ceiling
(``CEILING_SECONDS``) are in ``_forms/budget.py``: every stage that builds spends them.

They were set on the forms sweep (``bench/forms_sweep.py``): a change here moves its figures, so
measure it there, the whole sweep, before and after.
"""

from __future__ import annotations

# Work, not time (``_forms/budget.py``). A form is the same on every call, so every bound that
# decides what the search tries counts work, which does not depend on the machine or its load: a
# build's work is BUILD_WORK plus the parts it constructs (submodules, parameters, buffers
# registered) plus the torch calls its constructor makes (``_forms/rebuild/meta.py``).
#
# A build's fixed cost, in parts: binding and copying the arguments, the constructor's own
# Python, scoring the build against the live module, the proposals that led to it. Fit on the
# forms sweep's first 25 timm models (56 classes, 1501 builds; 2026-12-04, 2 shared CPUs at load
# ~6): a form's CPU time is ~0.32 ms per build plus ~19 us per part or torch call counted, so a
# build costs as much as ~17 parts beside the parts it makes.
BUILD_WORK = 20
# A child's form (a factory for a parent's field) may build past the parent's budget by this
# much, at most: the parent's own form stays within its own.
CHILD_SLACK = 2_500
# A build begun just before the budget is spent may finish past it by this much.
LAST_BUILD_SLACK = 2_500
# A build past SLOW_FACTOR times the largest build before or the live module's parts (whichever
# is more; and past SLOW_FLOOR work) is stopped: such a candidate is wrong anyway (a side tried as
# a multiple loops over a grid's pairs of points). The live module's parts count too: a form's
# own build with a guessed depth can be a tenth of the right one (ConvMixer's 32 blocks).
SLOW_FACTOR, SLOW_FLOOR = 8, 2_500
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
# Pairs of fields moved together, one to the live value and one keeping a width both derive
# (``rules/kept_width.py``): proposed per difference at most MAX_PAIR_MOVES, built per step at
# most PAIR_TRIES, and only where the search would otherwise stop (``loop.py``'s ``paired``):
# they are many, one of them right is rare, and tried earlier their builds spent the budget a
# field's candidates needed (timm's NestLevel, on the forms sweep of 2026-12-05).
MAX_PAIR_MOVES, PAIR_TRIES = 8, 8
# Flags of a per-stage list flipped one at a time (``rules/stage_flags.py``): a list longer than
# this is no list of stages.
MAX_FLAGS = 8
# Factories tried for a field not named like the layer's class (``rules/factories.py``): each
# costs a child form.
MAX_UNNAMED_FACTORIES = 3
# Candidate values per field: ``MAX_CANDIDATES`` in ``_forms/sources/pools.py``, which orders them.
