"""The training lens: ``watch(model, optimizer=None, every=10)`` follows a live training loop,
per module: the gradient norm of its own weights, the update ratio ||dw|| / ||w|| of a step (from
the optimizer's step hooks), and its output's mean, std and fraction of zeros; flags (vanishing,
exploding, magnitude, dead, saturated, nonfinite; one record per module and kind, counted, with
hysteresis: ``_watch/flags.py``); and the first step and module whose forward or backward
produced NaN/Inf.

    w = tx.watch(model, opt)                # or `with tx.watch(model, opt) as w:`
    for x, y in data:
        opt.zero_grad(); loss = F.cross_entropy(model(x), y); loss.backward(); opt.step()
        w.step(loss)                        # optional: the loss curve (steps count opt.step())
    w["layer1.0.conv1"].grad_norm           # [(step, value), ...]
    w.flags, w.nonfinite, w.loss; w.close()

Costs: a step that is not sampled costs a counter (the optimizer's step hooks); a sampled step
(the first, then every ``every``-th) reads the gradients' and weights' norms, the activation figures
and a strided copy of the trainable weights for the duration of ``optimizer.step()`` (the update
ratio; ``update_ratio=False`` skips it), read with one synchronisation at its end.
``check_every_step=True`` adds one pass over the gradients and the replay's capture to every step
(about 7% of a small MLP's step, bench/README.md): the first NaN/Inf is then found at the step it
appeared in, wherever that is; otherwise it is found at the sampled step that first sees it, which
says when weights were already spoilt at steps not checked. History is bounded: ``CAPACITY`` (96)
points per module and figure, thinned to span the whole run (``_watch/buffer.py``): under 1 MB
per 1,000 modules however long the run.

    >>> import torch
    >>> model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    >>> opt = torch.optim.SGD(model.parameters(), lr=0.1)
    >>> with watch(model, opt, every=2) as w:
    ...     for _ in range(4):
    ...         opt.zero_grad(); loss = model(torch.randn(16, 4)).pow(2).mean(); loss.backward()
    ...         opt.step(); _ = w.step(loss)
    >>> [s for s, _ in w["0"].grad_norm], len(w.loss), w.nonfinite, w.closed
    ([1, 3], 4, None, True)
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch import nn

from ._text import closest, short_repr
from ._watch import optim as _optim
from ._watch.buffer import CAPACITY, METRICS
from ._watch.finite import NonFinite
from ._watch.flags import KINDS, Flag, Thresholds
from ._watch.hooks import Attached
from ._watch.loss import number
from ._watch.record import Recorder

__all__ = ["CAPACITY", "KINDS", "Flag", "ModuleSeries", "NonFinite", "Thresholds", "Watch", "watch"]

# Every module under watch -> its watch: a second watch on a model (or a part of it) is refused.
_WATCHED: weakref.WeakKeyDictionary[nn.Module, Watch] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class ModuleSeries:
    """One module's history: each figure a list of (step, value), oldest first.

    Attributes:
        path: The module's dotted path.
        grad_norm: The gradient norm of its own weights.
        update_ratio: ``||w_after - w_before|| / ||w_before||`` of `optimizer.step()`.
        act_mean: Its output's mean.
        act_std: Its output's standard deviation.
        act_zeros: The fraction of its output that is exactly 0.
    """

    path: str
    grad_norm: list[tuple[int, float]]
    update_ratio: list[tuple[int, float]]
    act_mean: list[tuple[int, float]]
    act_std: list[tuple[int, float]]
    act_zeros: list[tuple[int, float]]


def watch(
    model: nn.Module,
    optimizer: Any = None,
    every: int = 10,
    *,
    thresholds: Thresholds | None = None,
    update_ratio: bool = True,
    check_every_step: bool = False,
    publish: bool = False,
    host: str | None = None,
) -> Watch:
    """Watch ``model`` while it trains (see the module's docs); ``optimizer`` gives the update
    ratio and counts the steps. Close it with ``w.close()`` or use it as a context manager.

    On every `every`-th step (the first included) each module gets its gradient norm, update ratio
    and output figures, and the weights' gradients are checked for NaN/Inf (every step with
    ``check_every_step=True``); the first step found non-finite is run again to name the module
    that made it.

    Args:
        model: The model being trained.
        optimizer: Its optimizer (a `torch.optim.Optimizer`, or an accelerate / Lightning wrapper
            of one); None counts steps by `Watch.step` calls and gives no update ratio.
        every: Sample the figures every this many steps.
        thresholds: The rules behind the flags (`torchxray.watch.Thresholds`); None: the defaults.
        update_ratio: False skips the copy of the weights the update ratio needs.
        check_every_step: Check every step's gradients for NaN/Inf, not only the sampled steps'
            (one pass over the gradients a step): the first NaN/Inf is then found at the step it
            appeared in even when that step is not sampled.
        publish: Serve this rank's figures to ``tx.attach`` from the job's c10d worker server
            (``torchxray.attach``): in each rank of a multi-rank job.
        host: With ``publish``, the address to listen on; loopback unless given (a warning
            says who else can then reach it).

    Returns:
        The `Watch`, hooked onto the model and the optimizer until it is closed.

    Raises:
        TypeError: `model` is not an `nn.Module`.
        ValueError: `every` is not a positive integer, or the model has no parameters.
        RuntimeError: The model (or a part of it) is already watched.

    Examples:
        >>> import torch, torchxray as tx
        >>> model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        >>> opt = torch.optim.SGD(model.parameters(), lr=0.1)
        >>> with tx.watch(model, opt, every=2) as w:
        ...     for _ in range(4):
        ...         opt.zero_grad(); loss = model(torch.randn(16, 4)).pow(2).mean(); loss.backward()
        ...         opt.step(); _ = w.step(loss)
        >>> w.steps, [step for step, _ in w["0"].grad_norm], w.nonfinite
        (4, [1, 3], None)
    """
    if publish or host is not None:
        from ._attach.publish import checked

        model = checked(model, publish, host)
    w = Watch(
        model,
        optimizer,
        every,
        thresholds=thresholds,
        update_ratio=update_ratio,
        check_every_step=check_every_step,
    )
    if not publish:
        return w
    from ._attach.publish import Publisher

    return Publisher.attach(w, host)


class Watch:
    """A training lens on one model (``tx.watch``).

    ``w[path]`` gives a module's history (`ModuleSeries`); `flags`, `active` and `nonfinite` say
    what went wrong and where. The explorer's Training tab draws the same (``ex.watch(...)``).

    Args:
        model: The model being trained.
        optimizer: Its optimizer, or None.
        every: Sample the figures every this many steps.
        thresholds: The rules behind the flags; None: the defaults.
        update_ratio: False skips the update ratio.
        check_every_step: Check every step's gradients for NaN/Inf, not only sampled steps'.

    Examples:
        >>> import torch, torchxray as tx
        >>> model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
        >>> opt = torch.optim.SGD(model.parameters(), lr=0.1)
        >>> w = tx.watch(model, opt, every=1)
        >>> for _ in range(3):
        ...     opt.zero_grad(); model(torch.randn(8, 4)).sum().backward(); opt.step()
        >>> w.steps, w.paths, len(w["0"].update_ratio)
        (3, ['0', '1', ''], 3)
        >>> w.close(); w.closed
        True
    """

    def __init__(
        self,
        model: nn.Module,
        optimizer: Any = None,
        every: int = 10,
        *,
        thresholds: Thresholds | None = None,
        update_ratio: bool = True,
        check_every_step: bool = False,
    ) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(f"watch() needs a torch.nn.Module, got {type(model).__name__}")
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"every must be a positive integer (steps), got {short_repr(every)}")
        if not any(True for _ in model.parameters()):
            raise ValueError(
                f"{type(model).__name__} has no parameters: there is nothing to train, so nothing "
                "to watch (watch the model that holds the weights)"
            )
        opt = None if optimizer is None else _optim.unwrap(optimizer)
        if opt is not None:
            _optim.check_holds(model, opt)
        other = next((_WATCHED[m] for m in model.modules() if m in _WATCHED), None)
        if other is not None:
            raise RuntimeError(
                f"{type(model).__name__} is already watched ({other!r}): close that watch first "
                "(w.close()) or keep using it"
            )
        self._model: nn.Module | None = model
        self.optimizer = opt
        self.every = every
        self._update_ratio = update_ratio
        self.check_every_step = bool(check_every_step)
        self._rec = Recorder(every, thresholds or Thresholds(), check_every=self.check_every_step)
        self._hooks = Attached(self)
        self._callbacks: list[Callable[[Watch], None]] = []
        self._paused = threading.Event()
        self._wake = threading.Event()
        self._stepped = False  # optimizer.step() ran since the last w.step()
        self._closure = False
        self._warned = False
        self._rec.index(model)
        self._rec.each = self._hooks.each  # a replay turns every module's hooks on
        try:
            self._hooks.modules(model, *self._module_hooks())
            if opt is not None:
                self._hooks.optimizer(opt, self._pre_step, self._post_step)
            for m in model.modules():
                _WATCHED[m] = self
        except BaseException:
            self._hooks.off(model)
            raise

    # -- reading -----------------------------------------------------------------------------

    def __getitem__(self, path: str) -> ModuleSeries:
        s = self._rec.series
        known = set(s.paths()) | set(self._rec.classes)
        if path not in known:
            near = closest(path, known)
            hint = f"; did you mean {', '.join(map(repr, near))}?" if near else ""
            raise KeyError(f"no module {path!r} in the watched model{hint}")
        return ModuleSeries(path, *(s.points(path, m) for m in METRICS))

    @property
    def paths(self) -> list[str]:
        """Modules with at least one sample, in the order they were first sampled."""
        return self._rec.series.paths()

    @property
    def loss(self) -> list[tuple[int, float]]:
        """The loss passed to ``step(loss)``, as (step, value)."""
        return self._rec.loss.points()

    @property
    def steps(self) -> int:
        """Steps completed (``optimizer.step()`` calls, or ``step()`` calls without optimizer)."""
        return self._rec.done

    @property
    def flags(self) -> list[Flag]:
        """One record per module and kind, in the order first raised: (step, path, kind, count,
        last): raised first at ``step``, ``count`` times in all, the last time at ``last``."""
        return list(self._rec.flags.records)

    @property
    def active(self) -> dict[str, tuple[str, ...]]:
        """The flags that hold now, per module (as of its last sample)."""
        return self._rec.flags.active

    @property
    def nonfinite(self) -> NonFinite | None:
        """The first step and module whose forward or backward produced NaN/Inf (None yet)."""
        return self._rec.nonfinite

    def latest(self, figure: str) -> dict[str, float]:
        """Each module's last sampled value of ``figure`` (a metric, or "param_norm").

        Args:
            figure: ``"grad_norm"``, ``"update_ratio"``, ``"act_mean"``, ``"act_std"``,
                ``"act_zeros"`` or ``"param_norm"``.

        Returns:
            ``{path: value}`` for the modules sampled with that figure.
        """
        return {p: v[figure] for p, v in self._rec.latest.items() if figure in v}

    @property
    def memory_bytes(self) -> int:
        """Bytes the history holds (per-module figures and the loss curve)."""
        rec = self._rec
        return rec.series.nbytes + rec.loss.steps.nbytes + rec.loss.values.nbytes

    @property
    def model(self) -> nn.Module:
        """The watched model (RuntimeError once the watch is closed)."""
        if self._model is None:
            raise RuntimeError("this watch was closed")
        return self._model

    @property
    def closed(self) -> bool:
        """Whether `close` ran: no hook is left, the history stays readable."""
        return self._model is None

    # -- the loop's side ---------------------------------------------------------------------

    def step(self, loss: Any = None) -> int:
        """Record ``loss`` (a number or a 1-element tensor) and, without an optimizer, end the
        step; returns the step it was recorded at.

        Args:
            loss: The step's loss, for the loss curve; None records none.

        Returns:
            The step the loss was recorded at (steps count `optimizer.step()` calls).

        Raises:
            TypeError: `loss` is neither a number nor a 1-element tensor.
        """
        value = None if loss is None else number(loss)
        if self.optimizer is not None:
            at = self._rec.done if self._stepped else self._rec.step
            self._stepped = False
            if value is not None:
                self._rec.loss_value(at, value)
                self._warn_nonfinite(value, at)
                self._boundary()  # the view draws this loss (and a pause asked for holds here)
            return at
        at = self._rec.step
        if value is not None:
            self._rec.loss_value(at, value)
        self._rec.backward_done(None, False)
        self._end()
        if value is not None:
            self._warn_nonfinite(value, at)
        return at

    def record_loss(self, step: int, value: float) -> None:
        """Record a loss logged at ``step`` (a trainer's logging: not every step has one).

        Args:
            step: The step it was logged at.
            value: The loss.
        """
        self._rec.loss_value(step, value)
        self._warn_nonfinite(value, step)

    def _module_hooks(self) -> tuple[Any, ...]:
        # The model's own hooks on a step whose gradients are checked (what a replay needs);
        # every module's on a sampled step alone (_watch/hooks.py says why).
        rec, capture = self._rec, self._rec.capture
        root = (capture.before, capture.after)
        return rec.forward, rec.tap, root, rec.sampling, rec.capturing

    def _pre_step(self, opt: Any, args: Any, kwargs: Any) -> None:
        # A closure (LBFGS, Lightning) runs forward and backward inside step(): read after it.
        self._closure = bool(args or kwargs) and callable(
            kwargs.get("closure", args[0] if args else None)
        )
        if self._rec.quiet and not self._closure:
            return  # a step that reads nothing (``Recorder.quiet``)
        if not self.closed and not self._closure:
            held = _optim.held(opt) if self._rec.sampling else None  # the update ratio's alone
            self._rec.backward_done(held, self._update_ratio)

    def _post_step(self, opt: Any, args: Any, kwargs: Any) -> None:
        if not self._closure and self._rec.quiet_end():
            # The step read nothing and the next one reads nothing either: a counter (the
            # view's callbacks and a pause still run at its end).
            self._stepped = True
            if self._callbacks or self._paused.is_set():
                self._boundary()
            return
        if not self.closed:
            if self._closure:
                self._rec.backward_done(None, False)
            self._rec.updated()
            self._stepped = True
            self._end()

    def _end(self) -> None:
        self._rec.end()
        self._hooks.each(self._rec.sampling)  # every module's hooks for a sampled step alone
        self._hooks.capture(self._rec.capturing)
        self._boundary()

    def _warn_nonfinite(self, value: float, at: int) -> None:
        if math.isfinite(value) or self._warned:
            return
        self._warned = True
        import warnings

        nf = self.nonfinite
        where = "" if nf is None else f"; it began at step {nf.step}: {_where(nf)}"
        warnings.warn(f"torchxray.watch: the loss is {value} at step {at}{where}", stacklevel=3)

    # -- between steps: the view's callbacks, pause ------------------------------------------

    def on_step(self, fn: Callable[[Watch], None]) -> Callable[[], None]:
        """Call ``fn(watch)`` at every step's end (and while paused); returns its remover.

        Args:
            fn: Called with this watch.

        Returns:
            A function that removes `fn` again.
        """
        self._callbacks.append(fn)
        return lambda: self._callbacks.remove(fn) if fn in self._callbacks else None

    def pause(self) -> None:
        """Hold the loop at its next step's end until ``resume()`` (the widget's Resume, or
        another thread); an interrupt ends the wait with KeyboardInterrupt."""
        self._paused.set()
        self._wake.set()

    def resume(self) -> None:
        """Let a paused loop go on."""
        self._paused.clear()
        self._wake.set()

    @property
    def paused(self) -> bool:
        """Whether the loop is held (or will be, at its next step's end)."""
        return self._paused.is_set()

    def _notify(self) -> None:
        for fn in list(self._callbacks):
            fn(self)

    def _boundary(self) -> None:
        self._notify()
        while self._paused.is_set() and not self.closed:
            self._wake.wait(0.05)
            self._wake.clear()
            for fn in list(self._callbacks):
                fn(self)

    # -- edits between steps ------------------------------------------------------------------

    def patched(self, apply: Callable[[], Any], undo: Callable[[], Any], what: str) -> Any:
        """Run a patch of the model (``apply``) between steps: the optimizer is made to hold the
        new weights, or the patch is undone (``undo``) and StaleOptimizer raised; the hooks
        follow the new modules.

        Args:
            apply: Makes the patch (e.g. ``lambda: log.edit(path, **changes)``).
            undo: Takes it back.
            what: The patch in words, for the refusal's message.

        Returns:
            What `apply` returned.
        """
        model = self.model
        before = _optim.snapshot(model)
        got = apply()
        try:
            if self.optimizer is not None:
                _optim.migrate(self.optimizer, before, model, what)
        except _optim.StaleOptimizer:
            undo()
            self.refresh()
            raise
        self.refresh()
        return got

    def refresh(self) -> None:
        """Follow the model's modules again (after an edit made outside ``patched``)."""
        model = self.model
        for m in [m for m, w in _WATCHED.items() if w is self]:
            del _WATCHED[m]
        self._rec.index(model)
        self._hooks.modules(model, *self._module_hooks())
        for m in model.modules():
            _WATCHED[m] = self

    # -- the end --------------------------------------------------------------------------------

    def close(self) -> None:
        """Remove every hook from the model and the optimizer; the history stays readable."""
        model, self._model = self._model, None
        self._rec.closed = True
        self._rec.finite.active = False
        self._paused.clear()
        self._wake.set()
        try:
            self._hooks.off(model)
        finally:
            for m in [m for m, w in list(_WATCHED.items()) if w is self]:
                _WATCHED.pop(m, None)
            callbacks, self._callbacks = self._callbacks, []
            for fn in callbacks:  # a last call: a view shows the watch closed
                try:
                    fn(self)
                except Exception:  # noqa: BLE001, S110 - closing must finish
                    pass

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_model", None) is not None:
            self.close()

    def __repr__(self) -> str:
        if self.closed:
            return f"<Watch closed after {self.steps} steps>"
        name = type(self.model).__name__
        return f"<Watch {name}: {self.steps} steps, every {self.every}, {len(self.flags)} flags>"

    # -- trainers -------------------------------------------------------------------------------

    def trainer_callback(self) -> Any:
        """A ``transformers.TrainerCallback`` that hands this watch the Trainer's optimizer and
        its logged loss: ``Trainer(..., callbacks=[w.trainer_callback()])``."""
        from ._watch.trainers import hf_callback

        return hf_callback(self)

    def lightning_callback(self) -> Any:
        """A Lightning ``Callback`` doing the same: ``Trainer(..., callbacks=[w.lightning_callback()])``
        (``lightning`` or ``pytorch_lightning``, imported lazily)."""
        from ._watch.trainers import lightning_callback

        return lightning_callback(self)

    def attach_optimizer(self, optimizer: Any) -> None:
        """Watch ``optimizer`` from now on (a trainer builds it after the watch began).

        Args:
            optimizer: An optimizer holding the model's parameters.

        Raises:
            ValueError: It holds none of the model's parameters.
        """
        opt = _optim.unwrap(optimizer)
        if opt is self.optimizer:
            return
        _optim.check_holds(self.model, opt)
        self._hooks.off_optimizer()
        self.optimizer = opt
        self._hooks.optimizer(opt, self._pre_step, self._post_step)


def _where(nf: NonFinite) -> str:
    return f"{nf.path or 'outside the model'} ({nf.phase}: {nf.detail})"
