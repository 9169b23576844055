"""tx.attach and watch(publish=True) in one process (a store of our own, world size 1): what a
rank serves and what the notebook reads, the token, nothing listening, a job that publishes
nothing, a job running torch's debug server, bad input. The multi-rank jobs (DDP, FSDP2, a
poller killed mid-read) are in tests/test_attach_job.py."""

from __future__ import annotations

import http.client
import json
import math
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
import torch
import torch.distributed as dist
from torch import nn

import torchxray as tx
from torchxray._attach import server
from torchxray.attach import NOTHING_PUBLISHED, AttachError, attach

# Worker servers the tests start beside the process's own: kept to the process's end, since
# destroying one makes it shut down, which can wait forever for a server no client reached.
_KEPT: list[Any] = []


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A job's store of our own: the watch finds it through MASTER_ADDR / MASTER_PORT."""
    master = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(master.port))
    monkeypatch.delenv("TORCHXRAY_TOKEN", raising=False)
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    yield master


def _net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))


def _train(model: nn.Module, opt: Any, w: Any, steps: int) -> None:
    for _ in range(steps):
        opt.zero_grad()
        loss = model(torch.randn(16, 4)).pow(2).mean()
        loss.backward()
        opt.step()
        w.step(loss)


def _post(port: int, body: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("POST", "/handler/torchxray", body=body)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def test_a_rank_serves_its_watch_and_the_notebook_reads_it(store: Any) -> None:
    model = _net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with tx.watch(model, opt, every=2, publish=True) as w:
        _train(model, opt, w, 5)
        with attach(f"127.0.0.1:{store.port}", timeout=5) as job:
            assert job.ranks == [0] and job.steps == {0: 5}
            got = job.series(0, "0", "grad_norm")
            assert [s for s, _ in got] == [1, 3, 5]
            # Exact to float32, where the watch's own history is rounded (float16 of the log).
            assert got[-1][1] == pytest.approx(w.latest("grad_norm")["0"], rel=1e-6)
            assert job.series(None, "0", "grad_norm") == got  # one rank: the job's value is its own
            assert [s for s, _ in job.loss[0]] == [1, 2, 3, 4]  # copied at the sampled steps
            assert job.first_nonfinite is None and job.flags == {0: []}
            _train(model, opt, w, 4)
            job.poll()
            assert job.steps == {0: 9} and [s for s, _ in job.series(0, "2", "grad_norm")][-1] == 9
            tree = job.model()  # tx.explore(job)'s stand-in: the same tree, on meta
            assert [p for p, _ in tree.named_modules()] == ["", "0", "1", "2"]
            assert tree.get_submodule("0").weight.shape == (8, 4)
            assert tree.get_submodule("0").weight.is_meta
            assert not job.ended
        # The watch closed: the rank says so and keeps its last figures.
        job2 = attach(f"127.0.0.1:{store.port}", timeout=5)
    job2.poll()
    assert job2.ended and job2.ended_at == 9 and "ended at step 9" in repr(job2)
    assert job2.series(0, "0", "grad_norm")[-1][0] == 9
    job2.close()


def test_the_token_is_checked_on_every_request(store: Any) -> None:
    model = _net()
    with tx.watch(model, publish=True):
        port = json.loads(store.get("torchxray/rank/0"))["port"]
        token = store.get("torchxray/token").decode()
        assert len(token) >= 32
        # Without the token, or with another, or not JSON: 403 and nothing else.
        big = json.dumps({"token": token, "pad": "x" * 5000})  # not even parsed
        for body in (
            "",
            "{}",
            '{"token": "nope"}',
            "not json",
            json.dumps({"token": token[:-1]}),
            big,
        ):
            assert _post(port, body) == (403, b"")
        status, text = _post(port, json.dumps({"token": token}))
        assert status == 200 and json.loads(text)["rank"] == 0
        with pytest.raises(AttachError, match="rank 0 refused the token: pass the job's token"):
            attach(f"127.0.0.1:{store.port}", timeout=5, token="wrong")


def test_a_token_of_the_jobs_choosing_stays_out_of_the_store(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCHXRAY_TOKEN", "a secret of my own")
    model = _net()
    with tx.watch(model, publish=True):
        assert not store.check(["torchxray/token"])
        monkeypatch.delenv("TORCHXRAY_TOKEN")
        with pytest.raises(AttachError, match="token is not in its store"):
            attach(f"127.0.0.1:{store.port}", timeout=5)
        attach(f"127.0.0.1:{store.port}", timeout=5, token="a secret of my own").close()


def test_nothing_listening_is_a_clear_error_within_the_timeout() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # free once closed: nothing listens there
    start = time.monotonic()
    with pytest.raises(AttachError, match=rf"nothing answers at 127.0.0.1:{port} .*waited 1 s"):
        attach(f"127.0.0.1:{port}", timeout=1)
    assert time.monotonic() - start < 3


def test_a_job_without_publish_says_so_rather_than_hang(store: Any) -> None:
    start = time.monotonic()
    with pytest.raises(AttachError) as e:
        attach(f"127.0.0.1:{store.port}", timeout=0.5)
    assert str(e.value).startswith(NOTHING_PUBLISHED)
    assert NOTHING_PUBLISHED == "this job publishes nothing: add publish=True to tx.watch"
    assert time.monotonic() - start < 3


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="'host:port'"):
        attach("localhost")
    with pytest.raises(ValueError, match="timeout must be a positive"):
        attach("127.0.0.1:1", timeout=0)
    with pytest.raises(ValueError, match="pass publish=True too"):
        tx.watch(_net(), host="0.0.0.0")


def test_publish_needs_the_jobs_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    monkeypatch.delenv("MASTER_PORT", raising=False)
    model = _net()
    with pytest.raises(RuntimeError, match="needs the job's store: call torch.distributed"):
        tx.watch(model, publish=True)
    tx.watch(model).close()  # nothing was left on the model: it can be watched again


def test_figures_of_a_nan_and_of_a_module_without_weights(store: Any) -> None:
    model = _net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with tx.watch(model, opt, every=1, publish=True) as w:
        _train(model, opt, w, 2)
        with torch.no_grad():
            model[2].bias.fill_(float("nan"))
        _train(model, opt, w, 1)
        job = attach(f"127.0.0.1:{store.port}", timeout=5)
        nf = job.first_nonfinite
        assert nf is not None and (nf.rank, nf.step, nf.module, nf.phase) == (0, 3, "2", "forward")
        assert math.isnan(job.series(0, "2", "act_std")[-1][1])  # a NaN figure stays a NaN
        assert job.series(0, "1", "grad_norm") == []  # ReLU: no weights, no gradient norm
        with pytest.raises(ValueError, match="each rank's own .* pass a rank"):
            job.series(None, "1", "act_std")
        with pytest.raises(KeyError, match="no module '3' has figures in this job"):
            job.series(0, "3", "grad_norm")
        job.close()


def test_a_wider_host_is_said_out_loud(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server, "_bound", None)  # a process of its own would start afresh
    monkeypatch.setattr(server, "_server", None)
    model = _net()
    with pytest.warns(UserWarning, match=r"listens on 0.0.0.0:\d+, reachable from other machines"):
        w = tx.watch(model, publish=True, host="0.0.0.0")
    with w, attach(f"127.0.0.1:{store.port}", timeout=5) as job:
        assert job.entries[0]["bind"] == "0.0.0.0" and job.steps == {0: 0}
    _KEPT.append(server._server)


def test_a_job_running_torchs_debug_server_gets_only_the_handler(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys
    import types

    from torch._C._distributed_c10d import _WorkerServer

    debug = _WorkerServer("127.0.0.1", 0)  # stands for start_debug_server()'s worker server
    _KEPT.append(debug)
    fake = types.ModuleType("torch.distributed.debug")
    fake._WORKER_SERVER = debug  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch.distributed.debug", fake)
    monkeypatch.setattr(server, "_bound", None)
    model = _net()
    with tx.watch(model, publish=True):
        entry = json.loads(store.get("torchxray/rank/0"))
        assert entry["port"] == debug.port and entry["debug_server"]
        with attach(f"127.0.0.1:{store.port}", timeout=5) as job:
            assert job.steps == {0: 0}


def test_the_training_tab_fed_by_a_job(store: Any) -> None:
    model = _net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with tx.watch(model, opt, every=1, publish=True) as w:
        _train(model, opt, w, 3)
        job = attach(f"127.0.0.1:{store.port}", timeout=5)
        ex = tx.explore(_net(), torch.randn(2, 4), attach=job)  # the notebook's own copy
        state = ex.training
        assert state["attached"]["ranks"] == [0] and state["attached"]["rank"] is None
        assert state["step"] == 3 and not state["pausable"] and state["watching"]
        session = ex._live()
        reply, changed = session.handle({"kind": "train_poll", "rank": None})
        assert reply == {"kind": "train_poll", "changed": False, "ended": False, "message": ""}
        _train(model, opt, w, 2)
        reply, _ = ex.rpc({"kind": "train_poll", "rank": 0}, [])  # the state follows
        assert reply["changed"]
        assert ex.training["step"] == 5 and ex.training["attached"]["rank"] == 0
        reply, _ = session.handle(
            {"kind": "train_figures", "figure": "grad_norm", "paths": ["0", "1"]}
        )
        assert reply["values"]["0"] > 0 and reply["values"]["1"] is None
        assert reply["ranks"] == {"0": 0} and len(reply["spark"]["0"]) == 5
        reply, _ = session.handle({"kind": "train_series", "path": "2"})
        assert [s for s, _ in reply["series"]["grad_norm"]] == [1, 2, 3, 4, 5]
        assert reply["rank"] == 0 and reply["ranks"][0]["grad_norm"] == reply["latest"]["grad_norm"]
        reply, _ = session.handle({"kind": "train_control", "action": "pause"})
        assert not reply["paused"] and "trains elsewhere" in reply["message"]
        reply, _ = session.handle({"kind": "train_poll", "rank": 7})
        assert reply["kind"] == "error" and "no rank 7" in reply["message"]
        ex.close()
        # No copy of the model here: the tree the job published.
        ex = tx.explore(job)
        assert [r["path"] for r in ex.tree_state["pages"][""]["items"]] == ["0", "1", "2"]
        assert "published its tree" in ex.probe_summary["status"]
        ex.close()
    ended = attach(f"127.0.0.1:{store.port}", timeout=5)
    ex = tx.explore(job)
    ex.rpc({"kind": "train_poll"}, [])
    assert ex.training["attached"]["ended"] and "job ended at step 5" in ex.training["note"]
    assert not ex.training["watching"] and ex.training["step"] == 5
    ex.close()
    job.close()
    ended.close()
