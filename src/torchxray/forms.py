"""Hyperparameter forms: ``form(module_or_class) -> Form`` with one ``Field`` per constructor
parameter, current values recovered from the live module, and ``Form.build(**changes)``.

    >>> import torch.nn as nn
    >>> f = form(nn.Conv2d(3, 8, 3, stride=2, bias=False))
    >>> f["bias"].value, f["bias"].origin, f["stride"].text
    (False, 'derived', '(2, 2)')
    >>> f.build(out_channels="16")
    Conv2d(3, 16, kernel_size=(3, 3), stride=(2, 2), bias=False)
    >>> f.validate(out_channels="abc")
    {'out_channels': "out_channels: expected an integer, got 'abc'"}

A form is made in five stages, each a package of ``_forms/`` that hands plain records to the
next and never calls back (``docs/ARCHITECTURE.md`` draws them):

1. ``_forms/signature.py``: what the constructor takes (``Constructor``);
2. ``_forms/sources/``: where each argument's value can come from, a registry of sources (the
   recorded call, the module's attributes, its children's structure, how ``__init__`` uses the
   argument, a config object, the default): every field's draft value (``Draft``) and, for a
   form the search must finish, what it starts from (``Leads``);
3. ``_forms/candidates/``: the search that assembles full argument sets from them and tries them
   by building on meta, within the form's work budget (``Found``);
4. ``_forms/exact/``: the one place that decides exact or refused-with-a-sentence (``Verdict``);
5. ``_forms/form/``: the ``Form`` and its fields, kinds and texts.

What every stage shares is beside them in ``_forms/``: the records (``field.py``), kinds
(``kinds.py``), values as text (``values.py``), value checks (``validate.py``), binding
(``bind.py``), configs (``configs.py``), the construction record (``record.py``), the budget
(``budget.py``) and building and comparing on meta (``rebuild/``). A layer's own form, which a
reading or a rule may need (a block's description, a factory for a field), is a route of its own
through the five stages, opened with ``form`` itself.
"""

from __future__ import annotations

import time

from torch import nn

from . import _gc
from ._forms import candidates, exact, sources
from ._forms import form as stage5
from ._forms.budget import BUDGET, CEILING_SECONDS, SEARCH_WORK, Budget
from ._forms.field import Field, FormError
from ._forms.form import Form
from ._forms.rebuild.meta import live_writes
from ._forms.rebuild.warmup import warm
from ._forms.record import record_everything, record_init_args
from ._forms.signature import constructor
from ._trace.scope import untouched

__all__ = ["Field", "Form", "FormError", "form", "record_everything", "record_init_args"]


def form(module_or_class: nn.Module | type) -> Form:
    """The constructor form of a module (its current values) or of a class (its defaults).

    Values are read from a recorded call (``tx.record_everything()``), the module's attributes
    and its children, and, where they do not all say, searched by rebuilding the class on the
    meta device until a rebuild matches the live module part by part. The form says whether its
    unchanged rebuild is exact (``Form.inexact``) and why not. The live module is left as found:
    the check hands its layers to the constructor it rebuilds with, and a constructor may change
    a layer it is given (``_trace.scope``).

    Args:
        module_or_class: An ``nn.Module`` instance or an ``nn.Module`` subclass.

    Returns:
        A ``Form``.

    Raises:
        TypeError: Not a module or a module class, a ``ScriptModule`` (no Python constructor),
            or a constructor whose signature cannot be read.

    Examples:
        >>> import torch.nn as nn, torchxray as tx
        >>> f = tx.form(nn.Conv2d(3, 8, 3, stride=2))
        >>> f["stride"].text, f["stride"].origin
        ('(2, 2)', 'attribute')
        >>> tx.form(nn.Conv2d)["stride"].value
        1
    """
    if isinstance(module_or_class, nn.Module):
        warm()  # torch's one-time meta warm-up is not the form's time (``_forms/rebuild/warmup.py``)
        with untouched(module_or_class, guard=False) as trace:
            with live_writes(trace.backups.before_write):
                return _open(module_or_class)
    return _open(module_or_class)


def _open(module_or_class: nn.Module | type) -> Form:
    """The five stages, in order (see the module doc)."""
    started = time.thread_time()
    ctor = constructor(module_or_class)  # 1
    draft = sources.draft(ctor)  # 2
    if not sources.searched(draft):
        return stage5.make(draft, draft.fields, draft.infos, gate=exact.check)  # 5
    # A child form (a factory for a field, a block's description) shares its parent's budget and
    # ceiling (``_forms/budget.py``).
    outer = BUDGET.get()
    ceiling = outer.ceiling if outer is not None else started + CEILING_SECONDS
    budget = Budget(SEARCH_WORK, ceiling, outer)
    token = BUDGET.set(budget)
    # The cyclic GC waits while the builds run: in a process with a big heap its passes rescan
    # everything, on the form's second, for garbage the builds do not need collected.
    collecting = _gc.pause()
    try:
        leads = sources.leads(draft, ceiling, form)  # 2, the search's start
        found = candidates.search(draft, leads, budget, form)  # 3
    finally:
        BUDGET.reset(token)
        _gc.resume(collecting)
    verdict = exact.decide(draft, found)  # 4
    return stage5.make(draft, verdict.fields, verdict.infos, verdict.hint, verdict.check)  # 5
