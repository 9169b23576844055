"""tx.attach on real multi-rank jobs (gloo on CPU, one process per rank, launched by
tests/fixtures/attach_job.py as torchrun would): the first NaN of a 4-rank DDP job named within
two polls, FSDP2's per-rank shard figures against norms of the full gradients, and a poller
killed in the middle of a read leaving the job's losses exactly as they are without any watch.
Few and small: each job costs seconds of process start."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from torchxray.attach import attach

pytestmark = pytest.mark.slow

JOB = Path(__file__).parent / "fixtures" / "attach_job.py"


class Launched:
    def __init__(self, tmp: Path, *args: str) -> None:
        self.hold = tmp / "hold"
        self.out = tmp / "out.json"
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("TORCHXRAY_TOKEN", None)
        self.proc = subprocess.Popen(
            [sys.executable, str(JOB), "--hold", str(self.hold), "--out", str(self.out), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("PORT "), line
        self.address = f"127.0.0.1:{int(line.split()[1])}"

    def finish(self, timeout: float = 120) -> dict[str, Any]:
        self.hold.touch()
        assert self.proc.wait(timeout) == 0
        return json.loads(self.out.read_text())

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Any]:
    started: list[Launched] = []

    def start(*args: str) -> Launched:
        job = Launched(tmp_path / str(len(started)), *args)
        started.append(job)
        return job

    for i in range(3):
        (tmp_path / str(i)).mkdir()
    yield start
    for job in started:
        job.kill()


def test_the_first_nan_of_a_4_rank_ddp_job_is_named_within_two_polls(launch: Any) -> None:
    run = launch("--world", "4", "--steps", "40", "--every", "10", "--publish",
                 "--nan", "2:37:2", "--check-every-step", "--step-sleep", "0.01")  # fmt: skip
    job = attach(run.address, timeout=60)
    assert job.ranks == [0, 1, 2, 3]
    over = None  # the first poll at which every rank has completed step 37
    while True:
        nf = job.first_nonfinite if job.polls else None
        if nf is not None:  # never a wrong answer, even while ranks are at different steps
            assert (nf.rank, nf.step, nf.module, nf.phase) == (2, 37, "blocks.2", "forward")
        if over is None and min(job.rank(r).done for r in job.ranks) >= 37:
            over = job.polls
        if over is not None and nf is not None:
            break
        assert over is None or job.polls < over + 2, "not named within two polls"
        time.sleep(0.1)
        job.poll()
    while min(job.steps.values()) < 40:
        time.sleep(0.1)
        job.poll()
    # The other ranks met it one step later (the NaN reached them through the all-reduce).
    got = {r: job.rank(r).nonfinite for r in job.ranks}
    assert {r: nf.step for r, nf in got.items() if nf is not None} == {0: 38, 1: 38, 2: 37, 3: 38}
    assert any(f.path == "blocks.2" and f.kind == "nonfinite" for f in job.flags[2])
    run.finish()
    job.poll()
    assert job.ended and job.ended_at == 40
    assert job.first_nonfinite is not None and job.first_nonfinite.rank == 2  # kept
    job.close()


def test_fsdp2_figures_are_each_ranks_shard_and_combine_to_the_full_gradients(
    launch: Any,
) -> None:
    run = launch("--world", "2", "--mode", "fsdp", "--steps", "3", "--every", "1", "--publish")
    job = attach(run.address, timeout=60)
    while min(job.steps.values()) < 3:
        time.sleep(0.1)
        job.poll()
    got = {p: job.series(None, p, "grad_norm")[-1] for p in job.paths if job.series(None, p, "grad_norm")}  # fmt: skip
    per_rank = {r: job.latest(r, "grad_norm") for r in job.ranks}
    sharded = job.rank(0).sharded
    out = run.finish()
    full = out["ranks"][0]["grad_norms"]
    assert set(got) == set(full) == {"embed", "head", *(f"blocks.{i}.fc" for i in range(4))}
    for path, norm in full.items():
        step, value = got[path]
        assert step == 3 and value == pytest.approx(norm, rel=1e-5), path
        # Each rank's own figure is its shard's (head's single row lies whole on rank 0).
        assert path in sharded and all(per_rank[r].get(path, 0.0) <= norm * 1.00001 for r in (0, 1))
    assert all(0 < per_rank[r]["blocks.0.fc"] < full["blocks.0.fc"] for r in (0, 1))
    job.close()


def test_a_poller_killed_mid_read_leaves_the_job_as_it_was(launch: Any) -> None:
    args = ("--world", "2", "--steps", "30", "--every", "2", "--step-sleep", "0.05")
    bare = launch(*args)  # no watch at all; both jobs train meanwhile
    watched = launch(*args, "--publish")
    job = attach(watched.address, timeout=60)
    port, token = int(job.entries[0]["port"]), job._token
    while job.rank(0).done < 1:  # its first step (the process group's first all-reduce) is slow
        time.sleep(0.05)
        job.poll()
    for _ in range(5):  # a poller at ~10 Hz while the job trains
        job.poll()
        time.sleep(0.1)
    assert job.rank(0).done < 30, "the job should still be training"
    # Another poller asks, reads 20 bytes of the reply and dies (SIGKILL: no cleanup, the
    # kernel resets its socket); one more sends half a request and goes away.
    killed = subprocess.run([sys.executable, "-c", KILLED, str(port), token], timeout=60)
    assert killed.returncode == -signal.SIGKILL
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"POST /handler/torchxray HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n{")
    job.poll()
    assert job.rank(0).state == "live"
    job.close()
    with_watch, without = watched.finish(), bare.finish()
    assert [r["losses"] for r in with_watch["ranks"]] == [r["losses"] for r in without["ranks"]]
    assert len(without["ranks"][0]["losses"]) == 30


KILLED = """
import json, os, signal, socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
body = json.dumps({"token": sys.argv[2]}).encode()
head = b"POST /handler/torchxray HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(body)
s.sendall(head + body)
s.recv(20)
os.kill(os.getpid(), signal.SIGKILL)
"""
