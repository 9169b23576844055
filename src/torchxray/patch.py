"""PatchLog: transactional replace / edit / bulk replace of submodules, with undo, redo and code.

    >>> import torch.nn as nn, torchxray as tx
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> log = tx.PatchLog(model)
    >>> log.replace("1", nn.GELU()).new_cls
    'GELU'
    >>> log.undo().op, type(model[1]).__name__
    ('replace', 'ReLU')

Rules every change follows (decided here, relied on by the widget):

- Everything is built, validated and prepared before the model is touched; the model is changed
  only by reassigning ``parent._modules[key]`` slots, and a failure while doing that puts back the
  slots already changed. A failed call leaves the same objects in the same state and adds no entry.
- A replacement takes the replaced module's device and floating dtype (those of its first tensor;
  for a module without tensors, those of its nearest ancestor that has some), its train/eval mode
  and the user's forward and forward-pre hooks (entries copied with their ``with_kwargs`` /
  ``always_called`` flags; handles made before still point at the old module; hooks that belong
  to the old module itself, such as lazy initialisation, are not copied). On a meta model the
  replacement goes to meta too. A replacement that itself holds meta tensors stays on meta: making
  real tensors would need an initialisation torchxray will not guess. A replacement that contains
  modules of the model (a wrapper around the old layer) is moved but keeps its own mode flags for
  those modules, and gets no hook copies: the wrapped layer still runs its own hooks.
- A module reachable at several paths is replaced at all of them unless ``which="this"``; a path
  through a shared *parent* names one slot, so every path through that parent changes with it.
- ``replace_all`` matches classes with ``isinstance`` and regexes with ``re.fullmatch`` over every
  path (aliases included). Only the outermost matches are replaced: a match inside another match
  goes away with its parent, and replacing both would mutate a module the undo history keeps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
import torch.nn as nn

from ._forms.form.cache import FormCache
from ._patch import code, freezing
from ._patch.edit import plan as edit_plan
from ._patch.paths import Match, SlotIndex, no_match, targets, tensor_bytes, tensors
from ._patch.placement import place
from ._patch.swaps import Swap, reverse
from ._patch.swaps import apply as apply_swaps
from .forms import Form, form


@dataclass(frozen=True)
class PatchEntry:
    """One applied change. ``changes`` maps a hyperparameter to ``(old, new)``; ``kept`` and
    ``reinitialised`` name the replacement's parameters/buffers copied from the old module or left
    as freshly initialised (edit only); ``guessed`` names the unchanged hyperparameters an edit
    rebuilt from a guess (form origin "default": record the constructor arguments with
    ``tx.record_init_args()`` to make them exact); ``effects`` says, one line per submodule, what
    an edit changed ("conv1 would be Conv2d(3, 16, ...), the live one is Conv2d(3, 8, ...)");
    ``code`` replays the change (see ``PatchLog.to_code``).

    Attributes:
        id: The entry's number in the log (1, 2, ...), as the History tab and `to_code` show it.
        op: ``"replace"``, ``"edit"``, ``"replace_all"``, ``"freeze"`` or ``"unfreeze"``.
        paths: Every path the change reached (a module registered twice has two).
        old_cls: The replaced module's class name (several joined by ", ").
        new_cls: The replacement's class name.
        changes: An edit's hyperparameters, ``{name: (old, new)}``.
        kept: The parameters and buffers an edit carried over from the old module.
        reinitialised: Those an edit left freshly initialised (their shape changed).
        code: Python that replays this change.
        guessed: Unchanged hyperparameters an edit rebuilt from a guess (form origin
            ``"default"``).
        effects: One line per submodule the edit changed.

    Examples:
        >>> import torch.nn as nn, torchxray as tx
        >>> log = tx.PatchLog(nn.Sequential(nn.Linear(4, 8), nn.ReLU()))
        >>> entry = log.edit("0", out_features=16)
        >>> entry.id, entry.op, entry.paths, entry.changes
        (1, 'edit', ('0',), {'out_features': (8, 16)})
        >>> entry.kept, entry.reinitialised
        ((), ('weight', 'bias'))
    """

    id: int
    op: Literal["replace", "edit", "replace_all", "freeze", "unfreeze"]
    paths: tuple[str, ...]
    old_cls: str
    new_cls: str
    changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    kept: tuple[str, ...] = ()
    reinitialised: tuple[str, ...] = ()
    code: str = ""
    guessed: tuple[str, ...] = ()
    effects: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Item:
    """One replacement object and the paths it goes to."""

    old: nn.Module
    new: nn.Module
    paths: tuple[str, ...]
    kept: tuple[str, ...] | None = None  # edit: names to carry over in replayed code
    cast: bool = True  # False when an edit sets dtype/device itself


@dataclass(frozen=True)
class _Record:
    entry: PatchEntry
    swaps: tuple[Swap, ...]
    imports: frozenset[str]
    flags: freezing.Flags | None = None  # freeze / unfreeze: requires_grad before and after


class PatchLog:
    """The change history of one model. Every method that changes the model returns the new
    ``PatchEntry``; ``undo``/``redo`` return the entry they undid or redid.

    Every change is a transaction: it is built and checked before the model is touched, and a
    failed call leaves the model exactly as it was and adds no entry. A replacement takes the
    replaced module's device, floating dtype, train/eval mode and the user's forward hooks.

    Args:
        model: The model to change, in place. `PatchLog.model` is it (after an edit of the root,
            ``log.edit("", ...)``, the rebuilt model).

    Raises:
        TypeError: `model` is not an `nn.Module`, or is a TorchScript module (its submodules cannot
            be swapped).

    Examples:
        >>> import torch.nn as nn, torchxray as tx
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        >>> log = tx.PatchLog(model)
        >>> _ = log.edit("0", out_features=16)
        >>> _ = log.edit("2", in_features=16)
        >>> _ = log.replace_all(nn.ReLU, lambda old: nn.GELU())
        >>> model
        Sequential(
          (0): Linear(in_features=4, out_features=16, bias=True)
          (1): GELU(approximate='none')
          (2): Linear(in_features=16, out_features=2, bias=True)
        )
        >>> [e.op for e in log.entries], log.undo().op, type(model[1]).__name__
        (['edit', 'edit', 'replace_all'], 'replace_all', 'ReLU')
    """

    def __init__(self, model: nn.Module) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(f"PatchLog needs an nn.Module, got {type(model).__name__}")
        _check_not_scripted(model)
        self.model = model
        self._done: list[_Record] = []
        self._undone: list[_Record] = []
        self._cleared: list[_Record] = []  # applied before clear(): code only, no modules
        # The forms of this model's modules, each opened once per state of the model (an Apply
        # asks for the edited module's form several times); emptied at every change below.
        self._forms: FormCache[Form] = FormCache(form)

    def form(self, module: nn.Module) -> Form:
        """``tx.form(module)``, opened once per state of the model: the same ``Form`` object
        until this log changes the model or the module's own parts change.

        Args:
            module: A module of this log's model.

        Returns:
            Its `Form`.
        """
        return self._forms(module)

    # -- changes -----------------------------------------------------------------------------

    def replace(
        self, path: str, new_module: nn.Module, which: Literal["all", "this"] = "all"
    ) -> PatchEntry:
        """Put ``new_module`` where ``path`` is (at every path of that module unless
        ``which="this"``).

        The replacement is moved to the old module's device and floating dtype, takes its
        train/eval mode and the user's forward and forward-pre hooks.

        Args:
            path: The dotted path of the module to replace.
            new_module: A built module (not a class: build one with ``tx.form(cls).build(...)``).
            which: ``"all"`` replaces the module at every path that reaches it; ``"this"`` only at
                `path`.

        Returns:
            The new `PatchEntry`.

        Raises:
            KeyError: No module at `path` (the message names the closest paths).
            TypeError: `new_module` is a class or not a module.
            ValueError: `new_module` is already the module at `path`, or `which` is unknown.

        Examples:
            >>> import torch.nn as nn, torchxray as tx
            >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
            >>> entry = tx.PatchLog(model).replace("1", nn.Tanh())
            >>> entry.op, entry.old_cls, entry.new_cls, model[1]
            ('replace', 'ReLU', 'Tanh', Tanh())
        """
        if which not in ("all", "this"):
            raise ValueError(f"which must be 'all' or 'this', got {which!r}")
        index = SlotIndex(self.model)
        old = _existing(index, path)
        if isinstance(new_module, type):
            raise TypeError(
                f"replace({path!r}, ...) needs a module instance, got the class "
                f"{new_module.__name__}; build one first, e.g. tx.form({new_module.__name__})"
                ".build(...)"
            )
        _check_module(new_module, f"the replacement for {path!r}")
        if new_module is old:
            raise ValueError(f"the module given is already the one at {path!r}; nothing to do")
        paths = tuple(index.paths_of(old)) if which == "all" else (path,)
        item = _Item(old, new_module, paths)
        return self._commit("replace", index, [item], {}, (), ())

    def edit(
        self,
        path: str,
        /,
        *,
        _confirm: bool = False,
        _inexact_ok: bool = False,
        **hyperparameters: Any,
    ) -> PatchEntry:
        """Rebuild the module at ``path`` from its form with ``hyperparameters`` changed, carry over
        every parameter and buffer whose name and shape still match (quantized tensors and
        parametrizations included), then replace it everywhere it is registered. Invalid values
        raise ``FormError`` (per field) and change nothing. Values equal to the live ones
        (compared parsed: ``"(2,2)"`` is ``(2, 2)``) are dropped; when none is left,
        ``ValueError("nothing changed: ...")`` and no entry is recorded. A module whose parameters
        would pass ``max(1 GiB, 25% of free memory)`` (estimated on meta) raises ``TooLarge`` (a
        FormError) unless ``_confirm=True``. An edit that would change a part of the module its
        changes do not reach (an inexact form: ``tx.form(module).inexact``) raises ``Inexact``
        (a FormError naming the part) unless ``_inexact_ok=True``; ``entry.effects`` lists what
        the edit changed.

        Args:
            path: The dotted path of the module to rebuild; ``""`` rebuilds the model itself
                (then `PatchLog.model` is the new model).
            **hyperparameters: Constructor arguments to change, by name as the module's form
                shows them (a config's fields as ``**{"config.hidden_size": 64}``); values may be
                text as typed into the form (``"(3, 3)"``).

        Returns:
            The new `PatchEntry` (`changes`, `kept`, `reinitialised`, `effects`).

        Raises:
            FormError: A value is invalid (``.errors`` maps each field to its message), the rebuild
                is too large without ``_confirm=True``, or inexact without ``_inexact_ok=True``.
            ValueError: Every value equals the live one: nothing would change.
            KeyError: No module at `path`.

        Examples:
            >>> import torch.nn as nn, torchxray as tx
            >>> model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))
            >>> log = tx.PatchLog(model)
            >>> entry = log.edit("0", kernel_size=5, padding=2)
            >>> model[0], entry.kept
            (Conv2d(3, 8, kernel_size=(5, 5), stride=(1, 1), padding=(2, 2)), ('bias',))
            >>> try:
            ...     log.edit("1", num_features="-1")
            ... except tx.FormError as e:
            ...     print(e.errors)
            {'num_features': 'num_features: expected a size >= 1, got -1'}
        """
        index = SlotIndex(self.model)
        old = self.model if path == "" else _existing(index, path)
        p = edit_plan(index, path, old, hyperparameters, _confirm, _inexact_ok, self.form)
        paths = ("",) if path == "" else tuple(index.paths_of(old))
        item = _Item(old, p.new, paths, p.kept, p.cast)
        return self._commit(
            "edit",
            index,
            [item],
            p.changes,
            p.kept,
            p.fresh,
            placed=True,
            guessed=p.guessed,
            effects=p.effects,
        )

    def matches(self, match: Match) -> list[str]:
        """The paths ``replace_all(match, ...)`` would change, in ``named_modules`` order.

        Args:
            match: A class, a tuple of classes, or a regex that fully matches paths.

        Returns:
            The paths of the outermost matching modules (aliases included).

        Examples:
            >>> import torch.nn as nn, torchxray as tx
            >>> log = tx.PatchLog(nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 2))))
            >>> log.matches(nn.Linear), log.matches("1[.].*")
            (['0', '1.0'], ['1.0'])
        """
        return [p for _, paths in targets(SlotIndex(self.model), match) for p in paths]

    def replace_all(self, match: Match, factory: Callable[[nn.Module], nn.Module]) -> PatchEntry:
        """Replace every outermost module matching ``match`` (a class, a tuple of classes or a
        regex fully matching paths) by ``factory(old_module)``, as one undoable entry. The factory
        is called once per distinct module; returning the module itself leaves it in place.

        Args:
            match: A class, a tuple of classes, or a regex that fully matches paths (``re.fullmatch``
                over every path, aliases included). A match inside another match is left to its
                parent's replacement.
            factory: Called with each old module, returns its replacement.

        Returns:
            One `PatchEntry` for all of them (one `undo` puts every module back).

        Raises:
            KeyError: Nothing matches (the message says what the model has).
            TypeError: `factory` is not callable, or returned something that is not a module.
            ValueError: The factory returned every module unchanged.

        Examples:
            >>> import torch.nn as nn, torchxray as tx
            >>> model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4), nn.ReLU())
            >>> entry = tx.PatchLog(model).replace_all(nn.ReLU, lambda old: nn.SiLU())
            >>> entry.paths, model[3]
            (('1', '3'), SiLU())
        """
        if not callable(factory):
            raise TypeError(f"factory must be callable (old module -> new module), got {factory!r}")
        index = SlotIndex(self.model)
        found = targets(index, match)
        if not found:
            raise KeyError(no_match(index, match))
        items = []
        for old, paths in found:
            new = factory(old)
            if new is old:
                continue
            _check_module(new, f"factory({type(old).__name__} at {paths[0]!r}) returned")
            items.append(_Item(old, new, paths))
        if not items:
            raise ValueError("the factory returned every matched module unchanged; nothing to do")
        return self._commit("replace_all", index, items, {}, (), ())

    def freeze(self, paths: Iterable[str] | str) -> PatchEntry:
        """``requires_grad=False`` for every parameter under ``paths``, as one undoable entry.

        Args:
            paths: One dotted path or several (``tx.select`` gives them).

        Returns:
            The new `PatchEntry`; `undo` puts every flag back as it was.

        Raises:
            KeyError: A path names no module.

        Examples:
            >>> import torch.nn as nn, torchxray as tx
            >>> model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
            >>> log = tx.PatchLog(model)
            >>> _ = log.freeze("0")
            >>> [p.requires_grad for p in model.parameters()]
            [False, False, True, True]
            >>> _ = log.undo()
            >>> all(p.requires_grad for p in model.parameters())
            True
        """
        return self._flags("freeze", paths, False)

    def unfreeze(self, paths: Iterable[str] | str) -> PatchEntry:
        """``requires_grad=True`` for every floating parameter under ``paths``.

        Args:
            paths: One dotted path or several.

        Returns:
            The new `PatchEntry`.

        Raises:
            KeyError: A path names no module.

        Examples:
            >>> import torch.nn as nn, torchxray as tx
            >>> model = nn.Linear(4, 2).requires_grad_(False)
            >>> tx.PatchLog(model).unfreeze("").op, model.weight.requires_grad
            ('unfreeze', True)
        """
        return self._flags("unfreeze", paths, True)

    def _flags(self, op: Literal["freeze", "unfreeze"], paths: Any, grad: bool) -> PatchEntry:
        index = SlotIndex(self.model)
        paths, flags = freezing.plan(index, paths, grad)
        text = freezing.code(freezing.title(self._next_id, op, paths, flags), paths, grad)
        classes = _names(index.module(p) for p in paths)
        entry = PatchEntry(self._next_id, op, paths, classes, classes, code=text)
        freezing.apply(flags)
        self._forms.changed()
        self._done.append(_Record(entry, (), frozenset(), flags))
        self._undone.clear()
        return entry

    # -- history -----------------------------------------------------------------------------

    @property
    def _next_id(self) -> int:
        # Ids number the applied entries (1..N, as the History lists them and to_code's comments
        # say): an entry made after an undo takes the undone one's number, which redo dropped.
        return len(self._cleared) + len(self._done) + 1

    @property
    def can_undo(self) -> bool:
        """Whether there is a change `undo` can take back."""
        return bool(self._done)

    @property
    def can_redo(self) -> bool:
        """Whether there is an undone change `redo` can apply again."""
        return bool(self._undone)

    @property
    def entries(self) -> tuple[PatchEntry, ...]:
        """Applied changes, oldest first (including those applied before ``clear()``)."""
        return tuple(r.entry for r in self._cleared + self._done)

    def undo(self) -> PatchEntry:
        """Put back the exact module objects the last change replaced.

        Returns:
            The entry undone.

        Raises:
            IndexError: Nothing to undo (`can_undo` is False).

        Examples:
            >>> import torch.nn as nn, torchxray as tx
            >>> model = nn.Sequential(nn.ReLU())
            >>> relu = model[0]
            >>> log = tx.PatchLog(model)
            >>> _ = log.replace("0", nn.GELU())
            >>> log.undo().new_cls, model[0] is relu, log.can_redo
            ('GELU', True, True)
        """
        if not self._done:
            raise IndexError("nothing to undo (check log.can_undo)")
        record = self._done[-1]
        apply_swaps(reverse(record.swaps), self)
        freezing.apply(record.flags, undo=True)
        self._forms.changed()
        self._undone.append(self._done.pop())
        return record.entry

    def redo(self) -> PatchEntry:
        """Re-apply the last undone change with the same replacement objects.

        Returns:
            The entry redone.

        Raises:
            IndexError: Nothing to redo (`can_redo` is False; a new change empties the redo list).

        Examples:
            >>> import torch.nn as nn, torchxray as tx
            >>> model = nn.Sequential(nn.ReLU())
            >>> log = tx.PatchLog(model)
            >>> _ = log.replace("0", nn.GELU())
            >>> _ = log.undo()
            >>> log.redo().new_cls, model[0]
            ('GELU', GELU(approximate='none'))
        """
        if not self._undone:
            raise IndexError("nothing to redo (check log.can_redo)")
        record = self._undone[-1]
        apply_swaps(list(record.swaps), self)
        freezing.apply(record.flags)
        self._forms.changed()
        self._done.append(self._undone.pop())
        return record.entry

    @property
    def retained_bytes(self) -> int:
        """Bytes of parameters and buffers that only the undo/redo history keeps alive."""
        seen = {id(t) for t in tensors(self.model)}
        total = sum(tensor_bytes(s.old, seen) for r in self._done for s in r.swaps)
        return total + sum(tensor_bytes(s.new, seen) for r in self._undone for s in r.swaps)

    def clear(self) -> int:
        """Forget undo/redo history (the replaced modules become collectable) and return the bytes
        it kept alive. Applied entries stay listed and in ``to_code()``; they can no longer be
        undone.

        Returns:
            The bytes of parameters and buffers the history kept alive (`retained_bytes`).

        Examples:
            >>> import torch.nn as nn, torchxray as tx
            >>> log = tx.PatchLog(nn.Sequential(nn.Linear(4, 4)))
            >>> _ = log.replace("0", nn.Linear(4, 4))
            >>> log.clear(), log.can_undo, len(log.entries)
            (80, False, 1)
        """
        freed = self.retained_bytes
        self._cleared += [_Record(r.entry, (), r.imports) for r in self._done]
        self._done.clear()
        self._undone.clear()
        return freed

    def to_code(self) -> str:
        """Python that replays the applied entries on a fresh instance of the model bound to
        ``model`` (public torch APIs and the helpers of ``torchxray.replay``).

        Returns:
            The code, imports first, then one commented block per applied entry (undone entries
            are left out).

        Examples:
            >>> import torch.nn as nn, torchxray as tx
            >>> log = tx.PatchLog(nn.Sequential(nn.Linear(4, 8), nn.ReLU()))
            >>> _ = log.replace("1", nn.GELU())
            >>> fresh = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
            >>> exec(log.to_code(), {"model": fresh})
            >>> fresh[1]
            GELU(approximate='none')
        """
        records = self._cleared + self._done
        imports: set[str] = set().union(*(r.imports for r in records))
        return code.header(imports) + "\n".join(r.entry.code for r in records)

    def __repr__(self) -> str:
        return f"<PatchLog: {len(self._done)} applied, {len(self._undone)} undone>"

    # -- the one place the model changes ---------------------------------------------------

    def _commit(
        self,
        op: Literal["replace", "edit", "replace_all"],
        index: SlotIndex,
        items: list[_Item],
        changes: dict[str, tuple[Any, Any]],
        kept: tuple[str, ...],
        fresh: tuple[str, ...],
        placed: bool = False,
        guessed: tuple[str, ...] = (),
        effects: tuple[str, ...] = (),
    ) -> PatchEntry:
        entry_id = self._next_id
        imports: set[str] = set()
        blocks, swaps, seen_slots = [], [], set()
        for item in items:
            exprs = []
            for path in item.paths:
                if path == "":  # an edit of the model itself: the log's model changes
                    swaps.append(Swap(None, "", item.old, item.new))
                    exprs.append("model")
                    continue
                slot = index.slots[path]
                _check_not_scripted(slot.parent)
                if (id(slot.parent), slot.key) in seen_slots:
                    continue  # another path through a shared parent: same slot
                seen_slots.add((id(slot.parent), slot.key))
                swaps.append(Swap(slot.parent, slot.key, item.old, item.new))
                exprs.append(code.slot_target(slot.parent_path, slot.parent, slot.key))
            # Code first: the constructor call reads the replacement as the user built it.
            blocks.append(code.Change(item.paths[0], item.new, tuple(exprs), item.kept, item.cast))
        title = code.title(entry_id, op, items, changes, kept, fresh, guessed)
        configs = code.ModelConfigs(index.model)
        text = code.entry_code(title, blocks, index.by_id, imports, configs, self.form)
        if not placed:
            for item in items:
                if not index.contains(item.new):
                    place(item.new, item.old, index, item.paths[0], cast=item.cast)
        apply_swaps(swaps, self)
        self._forms.changed()
        changed = {(id(s.parent), s.key) for s in swaps}
        paths = tuple(p for p, s in index.slots.items() if (id(s.parent), s.key) in changed)
        if any(s.parent is None for s in swaps):
            paths = ("", *paths)
        entry = PatchEntry(
            id=entry_id,
            op=op,
            paths=paths,
            old_cls=_names(i.old for i in items),
            new_cls=_names(i.new for i in items),
            changes=changes,
            kept=kept,
            reinitialised=fresh,
            code=text,
            guessed=guessed,
            effects=effects,
        )
        self._done.append(_Record(entry, tuple(swaps), frozenset(imports)))
        self._undone.clear()
        return entry


# -- helpers -------------------------------------------------------------------------------------


def _existing(index: SlotIndex, path: str) -> nn.Module:
    if not isinstance(path, str):
        raise TypeError(f"path must be a dotted string like 'layer1.0.conv1', got {path!r}")
    if path == "":
        raise ValueError(
            "path '' is the model itself; replace() changes submodules: build a new model, or "
            "edit('', ...) the model's own hyperparameters (the log's model becomes the rebuilt one)"
        )
    return index.module(path)


def _check_not_scripted(module: nn.Module) -> None:
    if isinstance(module, torch.jit.ScriptModule):
        raise TypeError(
            "TorchScript modules cannot be patched (their structure is compiled); patch the eager "
            "model, then script it again"
        )


def _check_module(obj: Any, what: str) -> None:
    if not isinstance(obj, nn.Module):
        raise TypeError(f"{what} is a {type(obj).__name__}, not an nn.Module; return/pass a module")


def _names(modules: Any) -> str:
    return ", ".join(dict.fromkeys(type(m).__name__ for m in modules))


__all__ = ["PatchEntry", "PatchLog"]
