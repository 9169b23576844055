// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { FakeModel, fakeKernel, firstState, type FakeNode } from "../fake_model";
import { Rpc } from "../protocol";
import type { TrainingState } from "../protocol";
import type { Ctx } from "./context";
import { TrainingPane, lineChart, trainingBadges } from "./training";

const NET: FakeNode = { name: "", cls: "Net", kids: [{ name: "fc", cls: "Linear", params: 3 }, { name: "act", cls: "ReLU" }] };

const STATE: TrainingState = {
  watching: true, step: 40, every: 10, paused: false, pausable: true,
  loss: [[1, 2.0], [20, 1.0], [40, 0.5]], active: { act: ["dead"], fc: ["vanishing", "exploding"] },
  flag_count: 3, recent: [{ step: 11, path: "act", kind: "dead", count: 2, last: 31 }], optimizer: "AdamW", note: "",
  nonfinite: { step: 37, path: "fc", phase: "backward", cls: "Linear", detail: "its backward made NaN" },
};

function setup(training: Partial<TrainingState>) {
  const asked: Record<string, any>[] = [];
  const selected: string[] = [];
  const kernel = fakeKernel(NET, {
    train_series: (m) => {
      asked.push(m);
      return { kind: "train_series", path: m.path, cls: "Linear", flags: ["vanishing"], latest: { grad_norm: 0.5 },
        series: { grad_norm: [[1, 1.0], [11, 0.5]], update_ratio: [], act_std: [[1, 0.3]], act_zeros: [] } };
    },
    train_control: (m) => {
      asked.push(m);
      return { kind: "train_control", paused: m.action === "pause", message: "the loop holds after step 41" };
    },
  });
  const model = new FakeModel({ selected: "fc", tree_state: firstState(NET) as never, training: training as never });
  const ctx: Ctx = {
    rpc: new Rpc(kernel.invoke as never), model: model as never, readonly: false,
    run: async (_l, fn) => fn(), error: () => undefined, select: (p) => void selected.push(p),
  };
  return { pane: new TrainingPane(ctx), asked, selected, model };
}

describe("TrainingPane", () => {
  it("draws the loss, the first NaN (selectable) and the flags; the module's sparklines from the kernel", async () => {
    const { pane, asked, selected } = setup(STATE);
    await pane.show();
    expect(pane.el.textContent).toContain("step 40 · sampled every 10 · AdamW · 3 flags");
    expect(pane.el.textContent).toContain("loss 0.500 at step 40");
    expect(pane.el.querySelector(".tx-train-flaglist")?.textContent).toContain("dead 2 times since step 11 (last 31) act");
    expect(pane.el.querySelector(".tx-train-nan")?.textContent).toContain("First NaN/Inf: step 37, fc");
    (pane.el.querySelector(".tx-train-nan button") as HTMLButtonElement).click();
    expect(selected).toEqual(["fc"]);
    expect(asked).toEqual([{ kind: "train_series", path: "fc" }]);
    expect(pane.el.querySelectorAll(".tx-train-series polyline").length).toBe(2);
    expect(pane.el.querySelector(".tx-train-series")?.textContent).toContain("no own weights");
    await pane.show(); // same step, same module: nothing asked again
    expect(asked.length).toBe(1);
  });

  it("pauses and resumes through train_control", async () => {
    const { pane, asked, model } = setup(STATE);
    await pane.show();
    const button = pane.el.querySelector(".tx-train-pause") as HTMLButtonElement;
    expect(button.textContent).toBe("Pause");
    button.click();
    await new Promise((r) => setTimeout(r, 0));
    expect(asked.at(-1)).toEqual({ kind: "train_control", action: "pause" });
    expect(pane.el.textContent).toContain("the loop holds after step 41");
    model.set("training", { ...STATE, paused: true });
    pane.update();
    expect(button.textContent).toBe("Resume");
    expect(pane.el.textContent).toContain("paused after step 40");
  });

  it("shows a closed watch closed: the kernel's note, no Pause, the curve kept", async () => {
    const note = "the watch is closed (w.close()) after 40 steps: its hooks are off the model";
    const { pane } = setup({ ...STATE, watching: false, note });
    await pane.show();
    expect(pane.el.querySelector(".tx-train-closed")?.textContent).toBe(note);
    expect(pane.el.querySelector(".tx-train-pause")).toBeNull();
    expect(pane.el.textContent).toContain("loss 0.500 at step 40");
  });

  it("says how to start when nothing is watched", async () => {
    const { pane, asked } = setup({});
    await pane.show();
    expect(pane.el.textContent).toContain("ex.watch(optimizer)");
    expect(asked).toEqual([]);
  });
});

describe("trainingBadges and lineChart", () => {
  it("badges each flagged row with its worst flag and marks the first NaN", () => {
    expect(trainingBadges(STATE)).toEqual({ act: "t-dead", fc: "first-nan" });
    expect(trainingBadges({ active: { fc: ["vanishing", "exploding"] } })).toEqual({ fc: "t-exploding" });
  });
  it("scales the points into the box", () => {
    const svg = lineChart([[0, 1], [10, 100]], 100, 10, true, "x");
    expect(svg.querySelector("polyline")?.getAttribute("points")).toBe("1.0,9.0 99.0,1.0");
  });
});
