// @vitest-environment happy-dom
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FakeModel, fakeKernel, firstState, type FakeNode } from "../fake_model";
import { Rpc } from "../protocol";
import type { TrainingState } from "../protocol";
import { sparkline } from "../sparkline";
import type { Ctx } from "./context";
import { TrainingPane } from "./training";

const NET: FakeNode = { name: "", cls: "Net", kids: [{ name: "blocks", cls: "ModuleList", kids: [{ name: "0", cls: "Block" }, { name: "1", cls: "Block" }, { name: "2", cls: "Block" }] }] };

const ATTACHED: TrainingState = {
  watching: true, step: 41, every: 10, paused: false, pausable: false,
  loss: [[1, 2.0], [40, 0.5]], active: { "blocks.2": ["nonfinite"] }, flag_count: 1, optimizer: "", note: "",
  recent: [{ step: 37, path: "blocks.2", kind: "nonfinite", count: 1, last: 37, rank: 2 }],
  nonfinite: { step: 37, path: "blocks.2", phase: "forward", cls: "Block", detail: "NaN/Inf in its output", rank: 2 },
  attached: {
    address: "127.0.0.1:29500", world: 4, ranks: [0, 1, 2, 3], rank: null, worst: 2,
    steps: { "0": 41, "1": 41, "2": 41, "3": 41 }, states: { "0": "live", "1": "live", "2": "live", "3": "slow" },
    ended: false, ended_at: 41, ended_exactly: false, poll_ms: 500, polls: 3,
  },
};

function setup(training: Partial<TrainingState>) {
  const asked: Record<string, any>[] = [];
  const kernel = fakeKernel(NET, {
    train_poll: (m) => {
      asked.push(m);
      return { kind: "train_poll", changed: true, ended: false, message: "" };
    },
    train_series: (m) => {
      asked.push(m);
      return { kind: "train_series", path: m.path, cls: "Block", flags: [], latest: { grad_norm: 0.5 }, rank: 2,
        series: { grad_norm: [[1, 1.0], [11, 0.5]], update_ratio: [], act_std: [], act_zeros: [] },
        ranks: [0, 1, 2, 3].map((r) => ({ rank: r, grad_norm: r === 2 ? 0.5 : 0.1, update_ratio: null, act_std: 0.3, act_zeros: 0, nonfinite: r === 2 ? ["act_std"] : [] })) };
    },
  });
  const model = new FakeModel({ selected: "blocks.2", tree_state: firstState(NET) as never, training: training as never });
  const ctx: Ctx = {
    rpc: new Rpc(kernel.invoke as never), model: model as never, readonly: false,
    run: async (_l, fn) => fn(), error: () => undefined, select: () => undefined,
  };
  const pane = new TrainingPane(ctx);
  document.body.append(pane.el); // on the page: the poller stops once it leaves
  return { pane, asked, model };
}

describe("the Training tab attached to a job", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("shows the job, the rank selector with the worst rank, the first NaN with its rank, no Pause", async () => {
    const { pane } = setup(ATTACHED);
    await pane.show();
    const text = pane.el.textContent ?? "";
    expect(text).toContain("attached to 127.0.0.1:29500 · 4/4 ranks · step 41 · sampled every 10");
    expect(pane.el.querySelector(".tx-train-nan")?.textContent).toContain("First NaN/Inf: rank 2, step 37, blocks.2");
    expect(pane.el.querySelector(".tx-train-pause")).toBeNull();
    const options = [...pane.el.querySelectorAll(".tx-train-rank option")].map((o) => o.textContent);
    expect(options).toEqual(["worst rank (rank 2)", "rank 0", "rank 1", "rank 2", "rank 3 (slow)"]);
    expect(pane.el.querySelector(".tx-train-flaglist")?.textContent).toContain("nonfinite rank 2, step 37 blocks.2");
    // the module's figures on the rank where it looks worst, and every rank's last sample
    expect(pane.el.querySelector(".tx-train-module h4")?.textContent).toContain("blocks.2 · Block · rank 2");
    expect(pane.el.querySelectorAll(".tx-train-ranks tr").length).toBe(5);
    expect(pane.el.querySelector(".tx-train-shown")?.textContent).toContain("NaN/Inf");
    pane.dispose();
  });

  it("polls every poll_ms, one request at a time, and asks at once for another rank", async () => {
    const { pane, asked } = setup(ATTACHED);
    await pane.show();
    expect(asked.filter((m) => m.kind === "train_poll")).toEqual([]);
    await vi.advanceTimersByTimeAsync(1100);
    expect(asked.filter((m) => m.kind === "train_poll")).toEqual([{ kind: "train_poll", rank: null }, { kind: "train_poll", rank: null }]);
    const select = pane.el.querySelector(".tx-train-rank") as HTMLSelectElement;
    select.value = "3";
    select.dispatchEvent(new Event("change"));
    await vi.advanceTimersByTimeAsync(0);
    expect(asked.at(-1)).toEqual({ kind: "train_poll", rank: 3 });
    pane.el.remove(); // the view closed
    await vi.advanceTimersByTimeAsync(600);
    const before = asked.length;
    await vi.advanceTimersByTimeAsync(5000);
    expect(asked.length).toBe(before); // no more polls
  });

  it("says the job ended at step N, keeps the last figures and stops polling", async () => {
    const ended = { ...ATTACHED, watching: false, note: "job ended at step 41: the last figures stay",
      attached: { ...ATTACHED.attached!, ended: true, ended_exactly: true, states: { "0": "gone", "1": "gone", "2": "gone", "3": "gone" } } };
    const { pane, asked } = setup(ended);
    await pane.show();
    expect(pane.el.querySelector(".tx-train-closed")?.textContent).toContain("job ended at step 41");
    expect(pane.el.textContent).toContain("loss 0.500 at step 40");
    await vi.advanceTimersByTimeAsync(3000);
    expect(asked.filter((m) => m.kind === "train_poll")).toEqual([]);
  });
});

describe("sparkline", () => {
  it("draws a row's last samples, low to high", () => {
    const svg = sparkline([1, 10, 100], true, "grad norm");
    expect(svg.getAttribute("aria-label")).toBe("grad norm");
    expect(svg.querySelector("polyline")?.getAttribute("points")).toBe("1.0,11.0 24.0,6.0 47.0,1.0");
  });
});
