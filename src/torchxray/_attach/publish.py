"""``watch(model, optimizer, publish=True)`` on a rank: the watch's figures served by the rank's
worker server to a notebook that attaches (``tx.attach``).

``Publisher`` ties the parts together: the ring of recent samples the watch fills at its sampled
steps (``_attach/ring.py``; the only thing the training loop runs for publishing), the handler on
the worker server (``_attach/server.py``) that answers with what the ring holds, and the rank's
entry in the job's store (``_attach/store.py``), written once when the watch starts.

Every request must carry the job's token (in its JSON body); one without it, or with another,
gets status 403 and an empty body. A poll names what the notebook has already (the last step, the
loss and the modules it knows, the flags' revision) and gets only what is new.
"""

from __future__ import annotations

import hmac
import json
import os
import socket
import time
from typing import TYPE_CHECKING, Any

from torch import nn

from .._unwrap import original_class
from . import server
from .ring import Ring
from .store import CLOSED, end_key, job_store, publish_rank, rank_and_world, token_of
from .wire import VERSION

if TYPE_CHECKING:
    from .._watch.record import Recorder

# The watch is `torchxray.watch.Watch`, which imports this module: typed as Any here, so that the
# two do not import each other (tests/test_import_graph.py).
Watch = Any

__all__ = ["Publisher", "checked", "sharded_paths", "tree_of"]

_current: Publisher | None = None  # the one publisher of this process (one rank, one watch)
MAX_REQUEST = 4096  # bytes: a poll is ~150


def _is_sharded(t: Any) -> bool:
    placements = getattr(t, "placements", None)
    return placements is not None and any(p.is_shard() for p in placements)


def checked(model: Any, publish: bool, host: str | None) -> Any:
    """The model a published watch follows: the module DDP wraps (named by the model's own paths,
    not ``module.``-prefixed); ValueError for ``host=`` without ``publish=True``."""
    from torch.nn.parallel import DistributedDataParallel

    if not publish:
        raise ValueError("host= is where a published watch listens: pass publish=True too")
    return model.module if isinstance(model, DistributedDataParallel) else model


def sharded_paths(model: nn.Module) -> set[str]:
    """Modules whose own weights are sharded DTensors (FSDP2): each rank holds a part of them."""
    return {
        path
        for path, m in model.named_modules()
        if any(_is_sharded(p) for p in m.parameters(recurse=False))
    }


def _user_class(cls: type) -> type:
    # FSDP2's fully_shard makes each module an instance of a class it generates (FSDP<Name>,
    # defined in torch.distributed): the tree names the class the person wrote.
    for c in cls.__mro__:
        if not c.__module__.startswith("torch.distributed."):
            return original_class(c)
    return cls


def tree_of(model: nn.Module) -> str:
    """The model's modules as JSON (``_attach/skeleton.py`` builds a stand-in from it): path,
    class, and each own weight's and buffer's global shape and dtype."""
    mods = []
    for path, m in model.named_modules():
        cls = _user_class(type(m))
        params = [
            [n, list(p.shape), str(p.dtype).removeprefix("torch."), bool(p.requires_grad)]
            for n, p in m.named_parameters(recurse=False)
        ]
        buffers = [
            [n, list(b.shape), str(b.dtype).removeprefix("torch.")]
            for n, b in m.named_buffers(recurse=False)
            if b is not None
        ]
        mods.append([path, cls.__name__, cls.__module__, cls.__qualname__, params, buffers])
    return json.dumps({"v": VERSION, "modules": mods})


class Publisher:
    """One rank's watch, served (see the module's docs)."""

    closed: bool

    @classmethod
    def attach(cls, w: Watch, host: str | None) -> Watch:
        """Publish ``w`` (``watch(..., publish=True)``); ``w`` is closed if that fails."""
        try:
            pub = cls(w._rec, w.model, w.every, host)
        except BaseException:
            w.close()
            raise
        w.on_step(pub.after_step)
        return w

    def __init__(self, rec: Recorder, model: nn.Module, every: int, host: str | None) -> None:
        global _current
        if _current is not None and not _current.closed:
            raise RuntimeError(
                "another watch in this process publishes already: close it first (w.close()); "
                "a rank publishes one watch"
            )
        store = self._store = job_store()
        self.rank, self.world = rank_and_world()
        self.rec = rec
        self.every = every
        self._seen = -1  # the last step copied
        self.ring = Ring()
        self.closed = False
        self.sharded = sharded_paths(model)
        self.tree = tree_of(model)
        self._token, self.token_in_store = token_of(store)
        self.bound = server.start(host)
        server.serve(self.answer)
        _current = self
        entry = {
            "host": self.bound.reachable,
            "port": self.bound.port,
            "bind": self.bound.host,
            "hostname": socket.gethostname(),
            "pid": os.getpid(),
            "world": self.world,
            "every": every,
            "started": time.time(),
            "debug_server": not self.bound.ours,
        }
        publish_rank(store, self.rank, self.world, entry)

    # -- the training thread ---------------------------------------------------------------

    def after_step(self, w: Watch) -> None:
        """The watch's step-end callback (``Watch.on_step``; also while paused, and once more
        when it closes): a copy at the sampled steps and when a NaN was first met, nothing at
        the others. Never raises into the loop."""
        rec = self.rec
        try:
            if w.closed:
                if not self.closed:
                    self.close()
            elif rec.done != self._seen and (
                (rec.done - 1) % self.every == 0
                or rec.nonfinite is not self.ring.snapshot.nonfinite
            ):
                self._seen = rec.done
                self.ring.sample(rec)
        except Exception:  # noqa: BLE001, S110 - publishing must never stop the training
            pass

    def close(self) -> None:
        """The watch closed: its last figures stay served, marked closed, until the process ends;
        its last step goes to the store (a notebook that polls too late still reads it)."""
        self.ring.sample(self.rec)
        self.closed = True
        try:
            self._store.set(end_key(self.rank), json.dumps({"done": self.rec.done}))
            self._store.add(CLOSED, 1)
        except Exception:  # noqa: BLE001, S110 - the store gone first: the closing must finish
            pass

    # -- the server's thread ---------------------------------------------------------------

    def answer(self, body: str) -> tuple[int, str]:
        if len(body) > MAX_REQUEST:  # not parsed: the GIL this thread takes is the loop's too
            return 403, ""
        try:
            req = json.loads(body)
        except ValueError:
            return 403, ""
        token = req.get("token") if isinstance(req, dict) else None
        if not isinstance(token, str) or not hmac.compare_digest(
            token.encode(), self._token.encode()
        ):
            return 403, ""
        if req.get("what") == "tree":
            return 200, self.tree
        return 200, json.dumps(self._poll(req))

    def _poll(self, req: dict[str, Any]) -> dict[str, Any]:
        since, loss_since = int(req.get("since", 0)), int(req.get("loss_since", 0))
        known, flags_rev = int(req.get("npaths", 0)), int(req.get("flags_rev", -1))
        ring = self.ring
        snap = ring.snapshot
        samples = ring.since(since)  # before the paths: every row they use is in the list then
        paths = ring.paths[: len(ring.paths)]
        nf = snap.nonfinite
        return {
            "v": VERSION,
            "rank": self.rank,
            "world": self.world,
            "done": self.rec.done,
            "every": self.every,
            "closed": self.closed,
            "npaths": len(paths),
            "paths": paths[known:],
            "sharded": [i for i in range(known, len(paths)) if paths[i] in self.sharded],
            "samples": [[s.step, s.rows, s.encoded()] for s in samples],
            "missed": ring.missed(since),
            "loss": ring.loss_since(loss_since),
            "flags_rev": snap.flags_rev,
            "flags": None
            if flags_rev == snap.flags_rev
            else [[f.step, f.path, f.kind, f.count, f.last] for f in snap.flags],
            "active": {p: list(k) for p, k in snap.active.items()},
            "nonfinite": None
            if nf is None
            else {
                "step": nf.step,
                "path": nf.path,
                "phase": nf.phase,
                "cls": nf.cls,
                "detail": nf.detail,
            },
        }
