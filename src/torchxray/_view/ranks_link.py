"""The plan an Explorer shows in its Ranks tab (``RanksLink``): the `RanksPlan`, the model
revision it was made at (a later patch makes it stale), the budget per rank the explorer was
given, and what planning again needs: the user's parallelize function, the mesh, the inputs and
``tx.ranks``'s options. ``ex.ranks(...)`` and the tab's "Plan again" (``tools_ranks.py``) go
through ``attach`` and ``replan``; ``ranks_view.py`` turns it into the tab's plain data.

    >>> link = RanksLink()
    >>> link.plan is None, link.can_replan
    (True, False)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from ..ranks import RanksPlan, ranks

__all__ = ["RanksLink", "Recipe", "recipe_of", "take_plan"]


@dataclass
class Recipe:
    """What ``tx.ranks`` needs to plan the explored model again."""

    parallelize: Callable[..., Any]
    mesh: dict[str, int]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    options: dict[str, Any] = field(default_factory=dict)


def recipe_of(plan: RanksPlan) -> Recipe | None:
    """How `plan` was made (``plan.source``: model, parallelize, args, kwargs); None where the
    plan does not say (a plan built by hand), and the tab then says how to plan again from the
    notebook."""
    src = plan.source
    if not isinstance(src, tuple) or len(src) != 4 or not callable(src[1]):
        return None
    _, parallelize, args, kwargs = src
    return Recipe(parallelize, dict(plan.mesh), tuple(args), dict(kwargs or {}),
                  {"step": bool(plan.stepped)})  # fmt: skip


class RanksLink:
    """The Ranks tab's plan, for one Explorer."""

    def __init__(self) -> None:
        self.plan: RanksPlan | None = None
        self.recipe: Recipe | None = None
        self.model_rev = 0  # the session's model revision the plan was made at
        self.budget: int | None = None
        self.missing = 0  # the plan's modules the explored model does not have
        self.error = ""  # the last "Plan again" that failed
        self.rev = 0  # counts the plans attached

    @property
    def can_replan(self) -> bool:
        return self.plan is not None and self.recipe is not None

    def attach(
        self,
        plan: RanksPlan,
        model: nn.Module,
        model_rev: int,
        recipe: Recipe | None = None,
        budget: int | None | bool = False,
    ) -> RanksPlan:
        """Show `plan` (made on `model` as it was at `model_rev`); `budget` False keeps the one
        given before."""
        if not isinstance(plan, RanksPlan):
            raise TypeError(
                f"ex.ranks() takes a plan from tx.ranks(...) or a parallelize function, not a "
                f"{type(plan).__name__}"
            )
        if budget is not False:
            self.budget = _budget(budget)
        names = {name for name, _ in model.named_modules(remove_duplicate=False)}
        self.plan, self.model_rev, self.error = plan, model_rev, ""
        self.recipe = recipe or recipe_of(plan)
        self.missing = sum(1 for p in plan.records if p not in names)
        self.rev += 1
        return plan

    def plan_now(
        self,
        model: nn.Module,
        model_rev: int,
        recipe: Recipe,
        budget: int | None | bool = False,
    ) -> RanksPlan:
        """``tx.ranks`` on `model` as it is now; the plan shown stays if it raises."""
        plan = ranks(model, recipe.parallelize, recipe.mesh, recipe.args, recipe.kwargs,
                     **recipe.options)  # fmt: skip
        return self.attach(plan, model, model_rev, recipe, budget)

    def replan(self, model: nn.Module, model_rev: int) -> RanksPlan:
        """Plan again with the recipe of the plan shown (after a patch); on failure the plan
        shown stays, and `error` says why."""
        self.error = ""
        if self.plan is None:
            raise ValueError("no plan to plan again: ex.ranks(parallelize, mesh={...}) makes one")
        if self.recipe is None:
            raise ValueError(
                "this plan does not say how it was made: "
                "ex.ranks(parallelize, mesh={...}) plans the model again"
            )
        try:
            return self.plan_now(model, model_rev, self.recipe)
        except Exception as e:
            self.error = f"planning again failed: {type(e).__name__}: {e}"
            raise

    def close(self) -> None:
        self.plan = self.recipe = None


def take_plan(kwargs: dict[str, Any]) -> RanksPlan | None:
    """``tx.explore(model, x, ranks=plan)``'s plan, taken out of the model's keywords; a ``ranks``
    keyword of any other value is the model's own and stays."""
    return kwargs.pop("ranks") if isinstance(kwargs.get("ranks"), RanksPlan) else None


def _budget(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"budget must be bytes per rank (a number above 0) or None, got {value!r}")
    return int(value)


def mesh_text(mesh: Mapping[str, int]) -> str:
    """``{"dp": 2, "tp": 2}`` as a notebook would write it."""
    return "{" + ", ".join(f"{k!r}: {v}" for k, v in mesh.items()) + "}"
