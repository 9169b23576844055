"""The rebuild search's rules, in the order the search tries their proposals.

Every rule is one relation between a difference (a build against the live module) and the
values that would explain it, in a file named for the relation, of one shape:
``propose(p: Problem) -> Iterator[dict[str, Any]]`` (``rules/problem.py``): each proposal is a
change of a few fields, tried by building (``_forms/candidates/infer.py``). A new rule is one file here, one
line in ``NAMED`` or ``UNNAMED`` below, and one test on a real library class
(``tests/test_forms_candidates_rule_<relation>.py``).

Why this order. The search takes the first proposal that scores better (and a few after it), and
tries at most ``GUIDED_TRIES`` per build (``_forms/candidates/tuning.py``), so the likeliest come first:
1. moves of several fields that a change of one alone never builds: a depth with its per-block
   rates, numbered layers, one pair per layer, a sequence as long as the stages it makes;
2. ``NAMED``: the values the difference names (the live number, string, class, keyword), cheap
   and most often right;
3. derived widths: moves of a few fields together, before the generic single changes (a width
   moved alone is often a step away); a width's start argument with the optional one added to
   it where given (``optional_term.py``: it reads only that shape, so it costs no other search
   a try);
4. the ``NAMED`` rules again on the members of a dataclass argument, one member at a time;
5. ``UNNAMED``: changes the difference allows without naming a value (flags, None, defaults),
   then factories, last, as each costs a child form; and on the members again;
6. ``last``: two fields moved together, one to the live value and one keeping a width both
   derive (a product or a sum): tried only where the search would otherwise stop (no proposal
   above, no field's candidate and no second look scored better: ``_forms/candidates/loop.py``'s
   ``paired``, ``PAIR_TRIES`` builds), each rule over every
   difference before the next (the field holding the number, then one it is a multiple of);
   then one field solved in a linear sum of several (``enc_hid * 2 + dec_hid``), one or two
   factors of a product (``patch * patch * channels``), one argument of a width through floor
   divisions (``d * ((n_mels - 1) // 2 // 2)``, solved by evaluating it), and a float
   recovered from a ratio of widths (``int(d_model * factor)``): both read hand-written
   relations, and tried earlier they led library searches that succeed without them astray (a
   ratio set before the flag that fuses a gate); last, a flag the constructor takes as a truth
   flipped where a layer is of another class (V-Net's ``nn.ELU() if elu else nn.PReLU(n)``):
   tried among the generic changes, it spent a library search's tries before the factory that
   was right (timm's ``BottleneckBlock``); just before it, the flag moved together with the
   widths of the layer its branch makes (``if outermost_linear: nn.Linear(hidden, out)``), a
   move the search looks one step past (``branch_layer.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from . import (
    branch_layer,
    class_flag,
    complement,
    depth,
    derived_widths,
    entries,
    factored,
    factories,
    floored,
    grid_pair,
    handed_kwargs,
    item_runs,
    iterated,
    kept_multiple,
    kept_width,
    keyword_item,
    kwargs_dict,
    layer_class,
    linear_sum,
    measured,
    number_pair,
    numbered,
    optional,
    optional_term,
    part_named,
    rounded_float,
    scaled_float,
    stage_flags,
    table_scale,
    unset_width,
    whole_factor,
    width_factor,
)
from .problem import Problem, Propose

__all__ = ["NAMED", "RULES", "UNNAMED", "Problem", "Propose", "Rule"]

Scope = Literal["module", "members", "last"]


@dataclass(frozen=True)
class Rule:
    """A rule in the registry: its relation's name, its ``propose``, and what it reads: the
    module's own fields, or (``members``) those of each dataclass argument in turn; ``last``: the
    module's own fields, read only where the search would otherwise stop."""

    name: str
    propose: Propose
    scope: Scope = "module"


# The values a difference names.
NAMED: tuple[tuple[str, Propose], ...] = (
    # First: a width moved instead would break the other layers it makes (``whole_factor.py``).
    ("whole_factor", whole_factor.propose),
    ("part_named", part_named.propose),
    ("unset_width", unset_width.propose),
    ("keyword_item", keyword_item.propose),
    ("entries", entries.propose),
    ("layer_class", layer_class.propose),
    ("number_pair", number_pair.propose),
    ("measured", measured.propose),
    ("grid_pair", grid_pair.propose),
    ("scaled_float", scaled_float.propose),
    ("complement", complement.propose),
    ("rounded_float", rounded_float.propose),
    ("table_scale", table_scale.propose),
)

# The changes a difference allows without naming a value; factories last (a child form each).
UNNAMED: tuple[tuple[str, Propose], ...] = (
    ("optional", optional.propose),
    ("stage_flags", stage_flags.propose),
    ("kwargs_dict", kwargs_dict.propose),
    ("handed_kwargs", handed_kwargs.propose),
    ("factories", factories.propose),
)

RULES: tuple[Rule, ...] = (
    Rule("depth", depth.propose),
    Rule("numbered", numbered.propose),
    Rule("item_runs", item_runs.propose),
    Rule("iterated", iterated.propose),
    *(Rule(name, propose) for name, propose in NAMED),
    Rule("derived_widths", derived_widths.propose),
    Rule("optional_term", optional_term.propose),
    *(Rule(name, propose, "members") for name, propose in NAMED),
    *(Rule(name, propose) for name, propose in UNNAMED),
    *(Rule(name, propose, "members") for name, propose in UNNAMED),
    Rule("kept_width", kept_width.propose, "last"),
    Rule("kept_multiple", kept_multiple.propose, "last"),
    Rule("linear_sum", linear_sum.propose, "last"),
    Rule("factored", factored.propose, "last"),
    Rule("floored", floored.propose, "last"),
    Rule("width_factor", width_factor.propose, "last"),
    Rule("branch_layer", branch_layer.propose, "last"),
    Rule("class_flag", class_flag.propose, "last"),
)
