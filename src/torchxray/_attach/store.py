"""The job's store as both sides use it: the job writes, under the ``torchxray/`` prefix, the world
size, a random token and each rank's address (``publish_rank``); the notebook reads them back
(``connect``, ``read_rank``).

The job's store is the TCPStore the ranks met through (torchrun's at ``MASTER_ADDR:MASTER_PORT``,
or the one ``init_process_group`` made): its address is the one address a person knows. The
process group wraps it in prefixes (``default_pg``, torchrun's ``/worker/attempt_0``): torchxray
writes to the TCPStore underneath, so that a notebook connecting to that address finds its keys
whatever the job's prefixes. Nothing here is a collective: each rank writes its own keys, and
the token is agreed on with one ``compare_set`` (the first rank's wins).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import time
from datetime import timedelta
from typing import Any

from .wire import KEY, VERSION

__all__ = [
    "ENV_TOKEN",
    "connect",
    "job_store",
    "publish_rank",
    "rank_and_world",
    "read_rank",
    "token_of",
]

ENV_TOKEN = "TORCHXRAY_TOKEN"  # a token of the person's choosing: never written to the store
WORLD = f"{KEY}/world"
TOKEN = f"{KEY}/token"
CLOSED = f"{KEY}/closed"  # how many ranks' watches have closed (each leaves its end_key first)


def rank_key(rank: int) -> str:
    return f"{KEY}/rank/{rank}"


def end_key(rank: int) -> str:
    """Where a rank's watch, closing, leaves its last step: a notebook that polls it too late
    (the process gone) still says at which step the job ended."""
    return f"{KEY}/end/{rank}"


def _base(store: Any) -> Any:
    import torch.distributed as dist

    while isinstance(store, dist.PrefixStore):
        store = store.underlying_store
    return store


def job_store() -> Any:
    """The TCPStore of the job this process is a rank of; RuntimeError saying how to have one."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        from torch.distributed import distributed_c10d as c10d

        store = _base(c10d._get_default_store())
    elif os.environ.get("MASTER_ADDR") and os.environ.get("MASTER_PORT"):
        store = dist.TCPStore(
            os.environ["MASTER_ADDR"],
            int(os.environ["MASTER_PORT"]),
            is_master=False,
            timeout=timedelta(seconds=60),
        )
    else:
        raise RuntimeError(
            "watch(publish=True) needs the job's store: call torch.distributed."
            "init_process_group() first, or set MASTER_ADDR and MASTER_PORT (torchrun sets both)"
        )
    if not isinstance(store, dist.TCPStore):
        raise RuntimeError(
            f"watch(publish=True) needs a TCPStore (torchrun's, or init_method 'env://' or "
            f"'tcp://'): this job's store is a {type(store).__name__}, which a notebook cannot "
            "reach by address"
        )
    return store


def rank_and_world() -> tuple[int, int]:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def token_of(store: Any) -> tuple[str, bool]:
    """The job's token and whether it is in the store: TORCHXRAY_TOKEN when the job has one (kept
    out of the store), else a random one, the same for every rank (the first rank's)."""
    chosen = os.environ.get(ENV_TOKEN)
    if chosen:
        return chosen, False
    mine = secrets.token_urlsafe(24)
    agreed = store.compare_set(TOKEN, "", mine)
    return (agreed.decode() if isinstance(agreed, bytes) else str(agreed)), True


def publish_rank(store: Any, rank: int, world: int, entry: dict[str, Any]) -> None:
    store.set(rank_key(rank), json.dumps({"v": VERSION, **entry}))
    store.set(WORLD, str(world))


# -- the notebook's side ----------------------------------------------------------------------


def split_address(address: str) -> tuple[str, int]:
    host, _, port = str(address).strip().rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit():
        raise ValueError(
            f"attach() needs the job's store as 'host:port' (MASTER_ADDR:MASTER_PORT), e.g. "
            f"'127.0.0.1:29500'; got {address!r}"
        )
    return host, int(port)


def connect(host: str, port: int, deadline: float) -> Any:
    """A client of the store at host:port, or ConnectionError by ``deadline`` (a monotonic time).
    A plain socket is tried first: TCPStore's own retries print a C++ traceback per try."""
    import torch.distributed as dist

    last: OSError | None = None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            why = f" ({last.strerror or type(last).__name__})" if last is not None else ""
            raise ConnectionError(
                f"nothing answers at {host}:{port}{why}: is the job running, and is this its store "
                "(MASTER_ADDR:MASTER_PORT)?"
            )
        try:
            with socket.create_connection((host, port), timeout=min(left, 1.0)):
                break
        except OSError as e:
            last = e
            time.sleep(min(0.1, max(deadline - time.monotonic(), 0)))
    left = max(deadline - time.monotonic(), 1.0)
    return dist.TCPStore(host, port, is_master=False, timeout=timedelta(seconds=left))


def wait_for(store: Any, keys: list[str], deadline: float) -> bool:
    """Whether every key is in the store by ``deadline`` (checked every 50 ms, never blocking)."""
    while True:
        if store.check(keys):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def read(store: Any, key: str) -> str:
    got = store.get(key)
    return got.decode() if isinstance(got, bytes) else str(got)


def closed_count(store: Any) -> int:
    """How many ranks have closed their watch (one round trip; 0 when the store is gone)."""
    try:
        return int(store.add(CLOSED, 0))
    except Exception:  # noqa: BLE001 - a store gone with its job
        return 0


def read_end(store: Any, rank: int) -> int | None:
    """The last step rank ``rank`` wrote when its watch closed (None: not written, or the store
    is gone with the job)."""
    try:
        if not store.check([end_key(rank)]):
            return None
        return int(json.loads(read(store, end_key(rank)))["done"])
    except Exception:  # noqa: BLE001 - a store gone with its job: nothing to read
        return None


def read_rank(store: Any, rank: int) -> dict[str, Any] | None:
    key = rank_key(rank)
    if not store.check([key]):
        return None
    entry: dict[str, Any] = json.loads(read(store, key))
    return entry
