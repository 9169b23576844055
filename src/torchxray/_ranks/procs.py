"""Processes for the dry run and for `verify`, ended whatever happens: a result, an error in a
rank, a rank that dies (the others would wait in a collective), the deadline, or a
KeyboardInterrupt in the caller; a rank also dies with its parent (PR_SET_PDEATHSIG on Linux).

Forked where autograd allows it (a parallelize function defined in a notebook or ``__main__``
needs no pickling), spawned where it does not: autograd refuses to run in a process forked after
its parent ran a backward (https://github.com/pytorch/pytorch/wiki/Autograd-and-Fork), which
`forkable` finds out by trying, in a forked child, once per process until the answer is no.
Ranks meet through a FileStore in a temporary folder: no port to pick.
"""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import os
import pickle
import queue
import signal
import tempfile
import time
import traceback
from collections.abc import Callable
from typing import Any

__all__ = ["RankDied", "dry_run_here", "forkable", "run_ranks"]

_POISONED = False
# Autograd's engine started here without device threads (`dry_run_here`): it starts them
# once, on a process's first backward (a ``call_once`` in torch's engine), so from then on no
# backward here starts any and a forked child can always run its own; no probe is needed again.
_QUIET_ENGINE = False


class RankDied(RuntimeError):
    """A rank's process failed, died or ran out of time; the message names the rank. `cause` is
    the exception the rank raised, when it could be sent back."""

    def __init__(self, message: str, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.cause = cause


_HAS_PROC = os.path.isdir("/proc/self/task")  # Linux: count the threads of a process


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _tiny_backward() -> None:
    """A one-element backward, whatever the caller's grad mode: under ``no_grad`` or
    ``inference_mode`` it would raise, and the probe would say this process cannot fork."""
    import torch

    with torch.inference_mode(False), torch.enable_grad():
        x = torch.ones(1, requires_grad=True)
        (x * 2).sum().backward()


def _probe() -> tuple[bool, bool]:
    """In a forked child: whether it can run a backward, and whether that backward started
    autograd's device threads (only once per process, on its first backward, where some device
    type reports devices)."""
    pid = os.fork()
    if pid == 0:  # the child says by its exit code: 0 ok, 2 ok but threads started, 1 failed
        code = 1
        try:
            before = _threads() if _HAS_PROC else 0
            _tiny_backward()
            code = 2 if _HAS_PROC and _threads() > before else 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return code in (0, 2), code == 0 and _HAS_PROC


def _asked() -> tuple[bool, bool] | None:
    """(ok, quiet) of `_probe` where a child must be asked; None where the answer is known: the
    engine runs here without device threads (`_QUIET_ENGINE`: ok and quiet), or fork is out."""
    global _POISONED
    if _QUIET_ENGINE or _POISONED or not hasattr(os, "fork"):
        return None
    ok, quiet = _probe()
    _POISONED = not ok
    return ok, quiet


def forkable() -> bool:
    """Whether a forked process can still run a backward."""
    answer = _asked()
    return _QUIET_ENGINE if answer is None else answer[0]


def dry_run_here() -> bool:
    """Whether the dry run runs in this process: where its backward (on fake tensors) leaves this
    process able to fork ranks that run theirs, autograd's engine then started here now without
    device threads; or where this process cannot fork ranks anyway. One probe at most.

    Autograd starts its device threads on a process's first backward, one per device of the device
    type that reports the most, and a child forked after that cannot run a backward. On a CPU-only
    machine no device type reports any, unless a FakeTensorMode was entered before that first
    backward: it installs a no-op CUDA device guard (``torch._C._ensureCUDADeviceGuardSet``) that
    reports devices, so a first backward on fake tensors starts threads where one on plain CPU
    tensors would not. A forked child tells whether a first backward here would start threads (or
    whether the engine already runs without them); a tiny plain backward then starts the engine
    before the dry run enters FakeTensorMode. Where it would start threads (a GPU machine, or a
    FakeTensorMode entered earlier in this process), the dry run runs in a forked process instead
    (False)."""
    global _QUIET_ENGINE
    answer = _asked()
    if answer is None:  # the engine runs here without threads, or this process cannot fork
        return True
    ok, quiet = answer
    if ok and quiet:
        _tiny_backward()
        _QUIET_ENGINE = True
    return quiet or not ok


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _child(rank: int, work: Callable[[int, str], Any], store: str, out: Any) -> None:
    _die_with_parent()
    try:
        result = work(rank, store)
    except (
        BaseException
    ) as exc:  # everything a rank raises goes back as one line (and the exception)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        try:
            cause: Any = pickle.loads(pickle.dumps(exc))
        except Exception:
            cause = None
        out.put((rank, False, (f"{type(exc).__name__}: {first}", cause), traceback.format_exc()))
        out.close()
        out.join_thread()
        os._exit(1)
    out.put((rank, True, result, ""))
    out.close()
    out.join_thread()
    os._exit(0)


def _end(procs: list[Any]) -> None:
    for p in procs:
        if p.pid is not None and p.is_alive():
            p.terminate()
    deadline = time.monotonic() + 3.0
    for p in procs:
        if p.pid is not None:
            p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.pid is not None and p.is_alive():
            p.kill()
            p.join(2.0)


def _take(item: tuple[Any, ...], results: dict[int, Any], failed: dict[int, Any]) -> None:
    rank, ok, value, _trace = item
    if ok:
        results[rank] = value
    else:
        failed[rank] = value


def _verdict(
    procs: list[Any], out: Any, results: dict[int, Any], failed: dict[int, Any]
) -> RankDied | None:
    """The first rank that died without a word (the others fail because it is gone), else the
    first that failed, else None."""
    if failed:
        time.sleep(0.5)  # a rank that died makes its peers fail: give its death time to show
    _drain(out, results, failed)
    for r, p in enumerate(procs):
        if r not in results and r not in failed and p.exitcode is not None:
            return RankDied(
                f"rank {r} died (exit code {p.exitcode}) before it reported: the other ranks were stopped."
            )
    if failed:
        rank = min(failed)
        message, cause = failed[rank]
        return RankDied(f"rank {rank} failed: {message}", cause)
    return None


def run_ranks(
    world_size: int, work: Callable[[int, str], Any], timeout: float, *, fork: bool
) -> dict[int, Any]:
    """``work(rank, store_path)`` in one process per rank; {rank: its result}, or RankDied. With
    ``fork=False`` the processes are spawned and `work` must pickle."""
    ctx: Any = mp.get_context("fork" if fork else "spawn")
    results: dict[int, Any] = {}
    with tempfile.TemporaryDirectory(prefix="tx-ranks-") as tmp:
        store = os.path.join(tmp, "store")
        out = ctx.Queue()
        procs = [
            ctx.Process(target=_child, args=(r, work, store, out), daemon=True)
            for r in range(world_size)
        ]
        try:
            for p in procs:
                p.start()
            deadline = time.monotonic() + timeout
            failed: dict[int, Any] = {}
            while len(results) < world_size:
                try:
                    _take(out.get(timeout=0.2), results, failed)
                except queue.Empty:
                    pass
                if failed or any(
                    r not in results and p.exitcode is not None for r, p in enumerate(procs)
                ):
                    if any(
                        r not in results and p.exitcode is not None for r, p in enumerate(procs)
                    ):
                        time.sleep(0.2)  # a rank's last words may still be in the pipe
                    verdict = _verdict(procs, out, results, failed)
                    if verdict is not None:
                        raise verdict
                if time.monotonic() > deadline:
                    missing = [r for r in range(world_size) if r not in results]
                    raise RankDied(
                        f"rank(s) {missing} did not finish within {timeout:g} s and were stopped: "
                        "raise timeout= for a slow model."
                    )
        finally:
            _end(procs)
            out.close()
            out.cancel_join_thread()
    return results


def _drain(out: Any, results: dict[int, Any], failed: dict[int, Any]) -> None:
    while True:
        try:
            item = out.get_nowait()
        except queue.Empty:
            return
        _take(item, results, failed)
