"""A running training job's figures, from a notebook: ``job = tx.attach("127.0.0.1:29500")``.

In the training script, on every rank, ``w = tx.watch(model, optimizer, every=10, publish=True)``
serves the watch's per-module figures from the rank's worker server (``_attach/publish.py``); the
job's store (the ``MASTER_ADDR:MASTER_PORT`` the ranks met at) says where each rank listens, and
holds a random token every request must carry. ``attach`` reads the store, then asks each rank
for what is new whenever the job is read (``job.poll()``; the Explorer's Training tab polls by
itself), keeping a bounded history per rank::

    job = tx.attach("127.0.0.1:29500", timeout=10)     # token: token=, $TORCHXRAY_TOKEN, the store
    job.ranks, job.steps                               # [0, 1, 2, 3], {0: 41, 1: 41, ...}
    job.series(2, "blocks.2", "grad_norm")             # [(1, 0.93), (11, 0.41), ...]
    job.first_nonfinite                                # RankNonFinite(rank=2, step=37, module='blocks.2', ...)
    job.flags                                          # {rank: [Flag, ...]}
    tx.explore(model, attach=job)  or  tx.explore(job) # the Training tab, fed live
    job.close()

Every figure is a rank's own: its own batch's activations, its own shard's weights and gradients
under FSDP2. ``job.series(None, path, figure)`` combines the ranks where that is exact: the norm
of a sharded weight (and its gradient, and its update ratio) from its shards' norms.

Nothing here changes the job: a poll reads what the rank copied at its sampled steps, and a
notebook that goes away mid-read leaves the rank's loop as it was.

    >>> attach("no-port-here")
    Traceback (most recent call last):
    ...
    ValueError: attach() needs the job's store as 'host:port' (MASTER_ADDR:MASTER_PORT), e.g. '127.0.0.1:29500'; got 'no-port-here'
"""

from __future__ import annotations

import math
import os
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ._attach import store as _store
from ._attach.client import Gone, RankClient, Refused
from ._attach.history import RankHistory
from ._attach.wire import FIGURES
from ._text import closest
from ._watch.flags import Flag

__all__ = ["NOTHING_PUBLISHED", "AttachError", "Job", "RankNonFinite", "attach"]

NOTHING_PUBLISHED = "this job publishes nothing: add publish=True to tx.watch"
POLL_TIMEOUT = 2.0  # seconds a rank may take to answer one poll
FRESH = 0.5  # reading the job polls it again when its last poll is older than this (seconds)
_PER_RANK = ("act_mean", "act_std", "act_zeros")  # each rank's own batch: never combined


class AttachError(ConnectionError):
    """The job cannot be attached to (nothing there, nothing published, the token refused)."""


@dataclass(frozen=True)
class RankNonFinite:
    """The job's first NaN/Inf: the rank, the step and the module (None: outside every module,
    e.g. the loss) where it began, in which phase (forward, backward or loss)."""

    rank: int
    step: int
    module: str | None
    phase: str
    cls: str
    detail: str


def attach(address: str, timeout: float = 10, token: str | None = None) -> Job:
    """Attach to the training job whose store listens at ``address`` ("host:port"); see the
    module's docs. Raises AttachError within ``timeout`` seconds when nothing answers there, when
    the job publishes nothing, or when its ranks refuse the token.

    The job's script publishes with ``tx.watch(model, optimizer, publish=True)`` on every rank;
    attaching reads the store, asks every rank once, and changes nothing in the job.

    Args:
        address: The job's store, ``"host:port"``: its ``MASTER_ADDR:MASTER_PORT``.
        timeout: Seconds to wait for the store to answer and the ranks to publish.
        token: The job's token; by default ``$TORCHXRAY_TOKEN``, else the one the ranks wrote
            to the store.

    Returns:
        The `Job`: the ranks' figures, polled when read.

    Raises:
        ValueError: `address` is not ``"host:port"``, or `timeout` is not a positive number.
        AttachError: Nothing answers at `address` within `timeout`, the job publishes nothing
            (no ``publish=True``), its token is neither given nor in its store, or its ranks
            refuse the token.

    Examples:
        >>> import socket, torchxray as tx
        >>> with socket.socket() as s:  # a port where nothing listens
        ...     s.bind(("127.0.0.1", 0))
        ...     port = s.getsockname()[1]
        >>> tx.attach(f"127.0.0.1:{port}", timeout=0.2)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        torchxray.attach.AttachError: nothing answers at 127.0.0.1:... (Connection refused): is the job running, and is this its store (MASTER_ADDR:MASTER_PORT)? (waited 0.2 s)
    """
    return Job(address, timeout=timeout, token=token)


class Job:
    """A live handle on a training job's published watches (``tx.attach``).

    Reading it (`steps`, `series`, `flags`, `loss`, `first_nonfinite`, ...) asks every rank for
    what is new when its last poll is older than half a second (`poll` asks now); each rank's
    history is kept, bounded, in the notebook. `close` stops asking; the job goes on, and what
    was read stays readable. A ``with`` block closes it.

    Args:
        address: The job's store, ``"host:port"``: its ``MASTER_ADDR:MASTER_PORT``.
        timeout: Seconds to wait for the store to answer and the ranks to publish.
        token: The job's token; by default ``$TORCHXRAY_TOKEN``, else the one the ranks wrote
            to the store.

    Attributes:
        address: The store's ``"host:port"``.
        world_size: The job's number of ranks.
        entries: Per rank, what it wrote to the store (its host, port, pid, ``every``, ...).
        polls: How many polls were made.
        closed: Whether `close` was called.

    Raises:
        ValueError: `address` is not ``"host:port"``, or `timeout` is not a positive number.
        AttachError: See `attach`.

    Examples:
        >>> import torch.distributed as dist, torchxray as tx
        >>> store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
        >>> tx.Job(f"127.0.0.1:{store.port}", timeout=0.2)  # a job without publish=True
        Traceback (most recent call last):
        ...
        torchxray.attach.AttachError: this job publishes nothing: add publish=True to tx.watch (the store at 127.0.0.1:... has no torchxray entries after 0.2 s)
    """

    def __init__(self, address: str, timeout: float = 10, token: str | None = None) -> None:
        host, port = _store.split_address(address)
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.address = f"{host}:{port}"
        deadline = time.monotonic() + timeout
        try:
            self._store: Any = _store.connect(host, port, deadline)
        except ConnectionError as e:
            raise AttachError(f"{e} (waited {timeout:g} s)") from None
        if not _store.wait_for(self._store, [_store.WORLD], deadline):
            raise AttachError(
                f"{NOTHING_PUBLISHED} (the store at {self.address} has no torchxray entries "
                f"after {timeout:g} s)"
            )
        self.world_size = int(_store.read(self._store, _store.WORLD))
        keys = [_store.rank_key(r) for r in range(self.world_size)]
        _store.wait_for(self._store, keys, deadline)
        self._token = self._find_token(token)
        self._ranks: dict[int, RankHistory] = {}
        self._clients: dict[int, RankClient] = {}
        self.entries: dict[int, dict[str, Any]] = {}
        self._read_entries()
        if not self._clients:  # pragma: no cover - the world key is written after a rank's entry
            raise AttachError(f"{NOTHING_PUBLISHED} (no rank's address in {self.address})")
        self._pool = ThreadPoolExecutor(max_workers=min(16, self.world_size), thread_name_prefix="torchxray-attach")  # fmt: skip
        self.polls = 0
        self._closed = 0  # ranks whose watch closed, as the store last said
        self._polled_at = 0.0
        self._tree: dict[str, Any] | None = None
        self.closed = False
        self.poll(first=True)

    # -- the store ------------------------------------------------------------------------------

    def _find_token(self, given: str | None) -> str:
        if given:
            return given
        env = os.environ.get(_store.ENV_TOKEN)
        if env:
            return env
        if self._store.check([_store.TOKEN]):
            return _store.read(self._store, _store.TOKEN)
        raise AttachError(
            "the job's token is not in its store (the job was started with TORCHXRAY_TOKEN): "
            "pass it as attach(..., token=...) or set TORCHXRAY_TOKEN here"
        )

    def _read_entries(self) -> None:
        for rank in range(self.world_size):
            if rank in self._clients:
                continue
            entry = _store.read_rank(self._store, rank)
            if entry is None:
                continue
            host = str(entry["host"])
            if host != "127.0.0.1" and not _resolves(host):
                host = self.address.rpartition(":")[0]  # a node name this machine cannot resolve
            self.entries[rank] = entry
            self._clients[rank] = RankClient(rank, host, int(entry["port"]), self._token, POLL_TIMEOUT)  # fmt: skip
            self._ranks[rank] = RankHistory(rank)

    # -- polling ----------------------------------------------------------------------------------

    def poll(self, first: bool = False) -> bool:
        """Ask every rank for what is new (concurrently; at most ~``POLL_TIMEOUT`` s); returns
        whether anything changed. Reading the job's figures does this when the last poll is
        older than half a second."""
        if self.closed:
            return False
        if len(self._clients) < self.world_size:
            self._read_entries()  # a rank that published late
        before = self._signature()
        todo = [(r, c) for r, c in self._clients.items() if self._ranks[r].state != "gone"]
        results = list(self._pool.map(lambda rc: self._ask(*rc), todo))
        self.polls += 1
        self._polled_at = time.monotonic()
        self._read_ends()
        refused = [e for e in results if isinstance(e, Refused)]
        if refused and (first or len(refused) == len(todo)):
            raise AttachError(str(refused[0]))
        return self._signature() != before

    def _read_ends(self) -> None:
        """The last step of each rank whose watch closed: its process may be gone before a poll
        reads it closed, and "job ended at step N" should name the step it ended at."""
        if self._store is None or all(h.final for h in self._ranks.values()):
            return
        closed = _store.closed_count(self._store)  # one round trip while nothing closed
        if closed <= self._closed:
            return
        self._closed = closed
        for rank, hist in self._ranks.items():
            end = None if hist.final else _store.read_end(self._store, rank)
            if end is not None:
                hist.done, hist.final = max(hist.done, end), True

    def _ask(self, rank: int, client: RankClient) -> Exception | None:
        hist = self._ranks[rank]
        try:
            hist.take(client.ask(hist.request()))
        except Gone as e:
            hist.state = "gone"
            return e
        except TimeoutError as e:
            hist.state = "slow"
            return e
        except Refused as e:
            return e
        except (ConnectionError, OSError, ValueError, KeyError) as e:
            hist.state = "slow"
            return e
        return None

    def _signature(self) -> tuple[Any, ...]:
        return tuple((r, h.done, h.state, h.flags_rev, h.nonfinite) for r, h in sorted(self._ranks.items()))  # fmt: skip

    def _fresh(self) -> None:
        if not self.closed and time.monotonic() - self._polled_at > FRESH:
            self.poll()

    # -- reading ----------------------------------------------------------------------------------

    @property
    def ranks(self) -> list[int]:
        """The ranks that publish (a rank that has not started its watch yet is missing)."""
        return sorted(self._ranks)

    @property
    def steps(self) -> dict[int, int]:
        """Steps each rank has completed (as of the last poll)."""
        self._fresh()
        return {r: h.done for r, h in sorted(self._ranks.items())}

    @property
    def flags(self) -> dict[int, list[Flag]]:
        """Each rank's flag records, as ``w.flags`` lists them on that rank."""
        self._fresh()
        return {r: list(h.flags) for r, h in sorted(self._ranks.items())}

    @property
    def active(self) -> dict[int, dict[str, tuple[str, ...]]]:
        """The flags that hold now, per rank and module."""
        self._fresh()
        return {r: dict(h.active) for r, h in sorted(self._ranks.items())}

    @property
    def loss(self) -> dict[int, list[tuple[int, float]]]:
        """Each rank's loss as it passed it to ``w.step(loss)`` (its own batch's)."""
        self._fresh()
        return {r: list(h.loss) for r, h in sorted(self._ranks.items())}

    @property
    def first_nonfinite(self) -> RankNonFinite | None:
        """The first step, over all ranks, whose forward or backward made NaN/Inf, and where.
        Told once every rank still running has reported the steps before it: a rank that has not
        yet may still hold an earlier one."""
        self._fresh()
        return first_nonfinite(self._ranks)

    @property
    def ended(self) -> bool:
        """Every rank's watch closed or its process gone; the last figures stay readable."""
        return all(h.state in ("gone", "closed") for h in self._ranks.values())

    @property
    def ended_at(self) -> int:
        """The last step any rank reported (exact once ``ended_exactly``)."""
        return max((h.done for h in self._ranks.values()), default=0)

    @property
    def ended_exactly(self) -> bool:
        """Whether every rank's last step is known (its watch closed), not only the last seen."""
        return self.ended and all(h.final for h in self._ranks.values())

    def rank(self, rank: int) -> RankHistory:
        """One rank's history as the notebook holds it: its ``series(path, figure)``,
        ``latest(figure)``, ``flags``, ``loss``, ``done`` (steps completed), as of the last poll.

        Args:
            rank: A rank that publishes (one of `ranks`).

        Returns:
            Its `RankHistory`.

        Raises:
            KeyError: No such rank publishes in this job (the message lists those that do).
        """
        try:
            return self._ranks[rank]
        except KeyError:
            raise KeyError(f"no rank {rank!r} publishes in this job; ranks: {self.ranks}") from None

    @property
    def paths(self) -> list[str]:
        """Every module path some rank has figures for, in the order the ranks sent them."""
        seen: dict[str, None] = {}
        for h in self._ranks.values():
            seen.update(dict.fromkeys(h.paths))
        return list(seen)

    def series(self, rank: int | None, path: str, metric: str) -> list[tuple[int, float]]:
        """``metric`` of the module at ``path`` on ``rank``, as (step, value), oldest first.
        ``rank=None``: the job's value where ranks combine exactly (a sharded weight's norms from
        its shards; a replicated one's, which every rank shares); activation figures are each
        rank's own and need a rank."""
        if metric not in FIGURES:
            raise KeyError(f"no figure {metric!r}; figures: {', '.join(FIGURES)}")
        self._fresh()
        if path not in self.paths:
            near = closest(path, self.paths)
            hint = f"; did you mean {', '.join(map(repr, near))}?" if near else ""
            raise KeyError(f"no module {path!r} has figures in this job{hint}")
        if rank is not None:
            return self.rank(rank).series(path, metric)
        if metric in _PER_RANK:
            raise ValueError(
                f"{metric} is each rank's own (its own batch): pass a rank, e.g. "
                f"job.series(0, {path!r}, {metric!r})"
            )
        return combined(list(self._ranks.values()), path, metric)

    def latest(self, rank: int, metric: str) -> dict[str, float]:
        """Each module's last value of ``metric`` on ``rank``."""
        self._fresh()
        return self.rank(rank).latest(metric)

    @property
    def tree(self) -> dict[str, Any]:
        """The model's modules as the job published them (path, class, weights' shapes)."""
        if self._tree is None:
            for _, client in sorted(self._clients.items()):
                try:
                    self._tree = client.ask({"what": "tree"})
                    break
                except (ConnectionError, TimeoutError, OSError):
                    continue
            else:
                raise AttachError("no rank answers: the job's model cannot be read")
        return self._tree  # type: ignore[return-value]

    def model(self) -> Any:
        """A stand-in of the job's model (its module tree; weights on the meta device, no
        forward), for ``tx.explore(job)`` where the notebook has no copy of the model."""
        from ._attach.skeleton import skeleton

        return skeleton(self.tree)

    def close(self) -> None:
        """Stop asking the ranks (the job goes on); the figures read so far stay readable."""
        if self.closed:
            return
        self.closed = True
        self._pool.shutdown(wait=True)
        for c in self._clients.values():
            c.close()
        self._store = None

    def __enter__(self) -> Job:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        ranks = self._ranks.values()
        where = f"{len(self._ranks)}/{self.world_size} ranks at {self.address}"
        if self.closed:
            return f"<Job {where}: closed>"
        state = (
            f"ended at step {self.ended_at}"
            if self.ended
            else f"step {max((h.done for h in ranks), default=0)}"
        )
        return f"<Job {where}: {state}>"


def _resolves(host: str) -> bool:
    try:
        socket.getaddrinfo(host, None)
        return True
    except OSError:
        return False


def first_nonfinite(ranks: dict[int, RankHistory]) -> RankNonFinite | None:
    found = [(h.nonfinite.step, r) for r, h in ranks.items() if h.nonfinite is not None]
    if not found:
        return None
    step, rank = min(found)
    # A rank that has completed step s - 1 has told every NaN of its steps before s.
    for h in ranks.values():
        if h.state not in ("gone", "closed") and h.nonfinite is None and h.done < step - 1:
            return None
    nf = ranks[rank].nonfinite
    assert nf is not None
    return RankNonFinite(rank, nf.step, nf.path, nf.phase, nf.cls, nf.detail)


def combined(ranks: list[RankHistory], path: str, metric: str) -> list[tuple[int, float]]:
    """``metric`` of ``path`` over the job: at the steps every rank sampled it, the norm of a
    sharded weight from its shards (sqrt of the sum of squares), a replicated weight's as the
    ranks have it (their mean: equal under DDP)."""
    per = [dict(h.series(path, metric)) for h in ranks]
    norms = [dict(h.series(path, "param_norm")) for h in ranks]
    sharded = any(path in h.sharded for h in ranks)
    steps = sorted(set.intersection(*(set(p) for p in per))) if per else []
    out = []
    for s in steps:
        vals = [p[s] for p in per]
        if not sharded:
            out.append((s, sum(vals) / len(vals)))
        elif metric == "update_ratio":  # sqrt(sum (u_r w_r)^2) / sqrt(sum w_r^2)
            ws = [n.get(s, math.nan) for n in norms]
            num = math.sqrt(sum((u * w) ** 2 for u, w in zip(vals, ws, strict=True)))
            den = math.sqrt(sum(w * w for w in ws))
            out.append((s, num / den if den else math.nan))
        else:
            out.append((s, math.sqrt(sum(v * v for v in vals))))
    return out
