"""tx.attach's goals, measured (``python -m bench.attach``; README.md "Attach").

- overhead: a training step with ``tx.watch(model, opt, every=10, publish=True)`` while another
  process polls the rank at 2 Hz (``tx.attach`` + ``job.poll()``, as the Training tab does),
  against the same step with ``tx.watch(model, opt, every=10)`` alone and against the bare step.
  Cycles of ten steps (one sampled, nine not) are timed interleaved, in an order that turns each
  round, each after the same 0.6 s pause: bare, watch, published and not polled, published and
  polled; the poller polls only during the last kind (it waits on a flag file otherwise), so the
  others pay nothing for it. Ratios of the cycles' medians. One process,
  world size 1 (a store of its own): what a rank pays does not depend on how many others there are.
- poll: the time of one ``job.poll()`` of 8 ranks (a DDP job of 8 gloo processes on this machine,
  training with a pause between steps), polled at 2 Hz while they train: median and 90th percentile.

One intra-op thread (``--threads``), as in bench.watch.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

import torchxray as tx
from torchxray._attach import publish

GOALS = {"published + polled / watch alone": 1.03, "published, not polled / watch alone": 1.03}
POLL_GOAL_S = 0.050
JOB = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "attach_job.py"

# The notebook's side: polls at 2 Hz while the flag file exists; ends when told (its stdin closes).
# Each published cycle is a new watch (its steps count from 1 again), so the poller forgets what
# it read before each poll: every poll asks for the whole ring (the paths, every sample held), more
# than an incremental poll of a long run carries.
POLLER = """
import os, sys, threading, time
import torchxray as tx
from torchxray._attach.history import RankHistory
flag = sys.argv[2]
job = tx.attach(sys.argv[1], timeout=60)
done = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
polls = 0
cpu = 0.0
while not done.is_set():
    if os.path.exists(flag):
        job._ranks[0] = RankHistory(0)
        t = time.process_time()
        job.poll(); polls += 1
        cpu += time.process_time() - t
    time.sleep(0.5)
print(polls, cpu, flush=True)
"""


def llama() -> tuple[nn.Module, Any]:
    import transformers

    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(
        vocab_size=8000, hidden_size=256, intermediate_size=688, num_hidden_layers=4,
        num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=128,
    )  # fmt: skip
    model = transformers.LlamaForCausalLM(cfg)
    ids = torch.randint(0, 8000, (2, 128))
    return model, lambda m: m(input_ids=ids, labels=ids).loss


def overhead(rounds: int) -> dict[str, Any]:
    store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(store.port))
    model, loss_of = llama()
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)

    def cycle(w: Any) -> float:
        t = time.perf_counter()
        for _ in range(10):
            opt.zero_grad()
            loss = loss_of(model)
            loss.backward()
            opt.step()
            if w is not None:
                w.step(loss)
        return (time.perf_counter() - t) / 10

    cycle(None)  # warm-up
    flag = Path(tempfile.mkdtemp()) / "poll"
    answers: list[tuple[float, float]] = []  # the rank's own time per poll: (CPU, wall) seconds
    answer = publish.Publisher.answer

    def timed(self: Any, body: str) -> tuple[int, str]:
        t, w = time.thread_time(), time.perf_counter()
        try:
            return answer(self, body)
        finally:
            answers.append((time.thread_time() - t, time.perf_counter() - w))

    publish.Publisher.answer = timed  # type: ignore[method-assign]
    with tx.watch(model, opt, every=10, publish=True):  # the rank's entry, for the poller to find
        poller = subprocess.Popen(
            [sys.executable, "-c", POLLER, f"127.0.0.1:{store.port}", str(flag)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        time.sleep(1.0)
    time.sleep(8.0)  # the poller's imports and attach, before any timing
    times: dict[str, list[float]] = {"bare": [], "watch": [], "alone": [], "published": []}
    kinds = list(times)
    for r in range(rounds):
        # The order turns each round and every cycle follows the same pause (the poller's next
        # poll falls within a polled cycle): neither the order nor the pause favours a kind.
        for kind in kinds[r % 4 :] + kinds[: r % 4]:
            if kind == "published":
                flag.touch()
            time.sleep(0.6)
            if kind == "bare":
                times[kind].append(cycle(None))
            else:
                with tx.watch(model, opt, every=10, publish=kind != "watch") as w:
                    times[kind].append(cycle(w))
            flag.unlink(missing_ok=True)
        print(f"  round {r + 1}/{rounds}: " + ", ".join(f"{k} {v[-1]:.3f}s" for k, v in times.items()), file=sys.stderr)  # fmt: skip
    assert poller.stdin is not None and poller.stdout is not None
    poller.stdin.close()
    polls_text, cpu_text = (poller.stdout.read().split() + ["0", "0"])[:2]
    polls, poller_cpu = int(polls_text), float(cpu_text)
    poller.wait(30)
    publish.Publisher.answer = answer  # type: ignore[method-assign]
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "model": "transformers Llama (4 layers, width 256), 2x128 tokens, SGD",
        "medians": med,
        "ratios": {
            "published + polled / watch alone": med["published"] / med["watch"],
            "published, not polled / watch alone": med["alone"] / med["watch"],
            "published + polled / bare": med["published"] / med["bare"],
            "watch alone / bare": med["watch"] / med["bare"],
        },
        "polls": polls,
        "answer_cpu_s": statistics.median(a for a, _ in answers) if answers else 0.0,
        "answer_wall_s": statistics.median(w for _, w in answers) if answers else 0.0,
        "answers": len(answers),
        "poller_cpu_per_poll_s": poller_cpu / polls if polls else 0.0,
        "runs": times,
    }


def poll_8(polls: int) -> dict[str, Any]:
    hold = Path(tempfile.mkdtemp()) / "hold"
    proc = subprocess.Popen(
        [sys.executable, str(JOB), "--world", "8", "--steps", "100000", "--every", "10",
         "--publish", "--step-sleep", "0.2", "--hold", str(hold)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().split()[1])
        job = tx.attach(f"127.0.0.1:{port}", timeout=180)
        while min(job.steps.values()) < 2:  # every rank trains and has a sample to send
            time.sleep(0.5)
            job.poll()
        times = []
        for _ in range(polls):
            t = time.perf_counter()
            job.poll()
            times.append(time.perf_counter() - t)
            time.sleep(0.5)
        steps = job.steps
        job.close()
    finally:
        import signal

        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    times.sort()
    return {
        "ranks": 8,
        "median_s": statistics.median(times),
        "p90_s": times[int(0.9 * (len(times) - 1))],
        "polls": polls,
        "steps": steps,
        "runs": times,
    }


def table(row: dict[str, Any] | None, poll: dict[str, Any] | None) -> str:
    out = ["| row | anchor | figure | goal | met |", "|---|---|---|---|---|"]
    if row is not None:
        m = row["medians"]
        anchor = f"bare {m['bare']:.3f} s, watch {m['watch']:.3f} s, published {m['alone']:.3f} s, published + polled {m['published']:.3f} s per step"  # fmt: skip
        for key, ratio in row["ratios"].items():
            goal = GOALS.get(key)
            met = "" if goal is None else ("yes" if ratio <= goal else "no")
            goal_text = "" if goal is None else f"<= {goal:.2f}x"
            out.append(f"| {row['model']}: {key} | {anchor} | {ratio:.3f}x | {goal_text} | {met} |")
        per_s = row["answer_cpu_s"] * 2  # 2 Hz
        out.append(
            f"| the rank's own time per poll (the handler, on the server's thread) | {row['answers']} polls | "
            f"{1000 * row['answer_cpu_s']:.2f} ms CPU ({1000 * row['answer_wall_s']:.2f} ms wall): "
            f"{100 * per_s:.3f}% of a core at 2 Hz | | |"
        )
        out.append(
            f"| the poller's own CPU per poll (the notebook's process) | {row['polls']} polls | "
            f"{1000 * row['poller_cpu_per_poll_s']:.1f} ms | | |"
        )
    if poll is not None:
        med, p90 = poll["median_s"], poll["p90_s"]
        out.append(
            f"| one poll of 8 ranks (gloo DDP, training) | {poll['polls']} polls at 2 Hz | median "
            f"{1000 * med:.1f} ms, p90 {1000 * p90:.1f} ms | <= 50 ms | {'yes' if med <= POLL_GOAL_S else 'no'} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.attach", description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--polls", type=int, default=40)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--only", nargs="*", default=["overhead", "poll"])
    p.add_argument("--json", default="")
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    load = os.getloadavg()
    row = overhead(a.rounds) if "overhead" in a.only else None
    poll = poll_8(a.polls) if "poll" in a.only else None
    print(table(row, poll))
    print(
        f"\nload average before: {load[0]:.1f} (1 min), {os.cpu_count()} CPUs; after: {os.getloadavg()[0]:.1f}"
    )
    if a.json:
        Path(a.json).write_text(json.dumps({"overhead": row, "poll": poll, "load": load}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
