// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { FakeModel, fakeKernel, firstState, flush, paneCtx, type FakeNode } from "../fake_model";
import type { RankRow, RanksState } from "../protocol";
import { commText, headline, RanksPane, showRankBadges, spreadText } from "./ranks";

const NET: FakeNode = { name: "", cls: "Sequential", kids: [{ name: "0", cls: "Linear" }, { name: "1", cls: "ReLU" }, { name: "2", cls: "Linear" }] };

// 10 rows over 4 ranks (FSDP2): 3, 3, 3, 1.
const ROWS = [3, 3, 3, 1];

function rowsFor(rank: number): RankRow[] {
  const spread: [number[], string][] = [[[3, 16], "0-2"], [[1, 16], "3"]];
  return [
    { path: "", cls: "Sequential", bytes: 0, tensors: [], comms: [{ phase: "backward", op: "reduce_scatter", count: 2, bytes: 992, mesh_dim: "dp" }] },
    {
      path: "0",
      cls: "Linear <b>x</b>",
      bytes: ROWS[rank] * 64,
      tensors: [{ name: "weight", placement: "(Shard(dim=0),)", mesh_dims: ["dp"], sharded: true, shape: [ROWS[rank], 16], global_shape: [10, 16], bytes: ROWS[rank] * 64, spread }],
      comms: [{ phase: "forward", op: "all_gather", count: 1, bytes: 816, mesh_dim: "dp" }],
    },
  ];
}

function state(extra: Partial<RanksState> = {}): RanksState {
  const memory = ROWS.map((r, rank) => ({ rank, params: r * 68, buffers: 0, grads: r * 68, optimizer: r * 136, activations: 1984, peak: 2000 + r * 300 }));
  return {
    status: "ok", world_size: 4, mesh: [{ name: "dp", size: 4 }], stepped: true, modules: 4, shown: 3, memory, budget: null,
    notes: ["ranks hold shards of different sizes"], stale: false, can_replan: true, replan_note: "", missing: 0,
    sharded: ["0", "2"], comms: ["", "0"], error: "", rev: 1, ...extra,
  };
}

function setup(s: Partial<RanksState> = state(), readonly = false) {
  const errors: string[] = [];
  const selected: string[] = [];
  const model = new FakeModel({ selected: "", tree_state: firstState(NET) as never, ranks_state: s as never });
  const kernel = fakeKernel(NET, {
    ranks: (m) => ({ kind: "ranks", rank: m.rank, rows: rowsFor(m.rank), rev: 1 }),
    ranks_plan: () => {
      const next = state({ rev: 2 });
      model.set("ranks_state", next);
      return { kind: "ranks_plan", ...next };
    },
  });
  const ctx = paneCtx(kernel, model, readonly, errors, { select: (p) => selected.push(p) });
  return { pane: new RanksPane(ctx), model, kernel, errors, selected };
}

const shapeCell = (pane: RanksPane) => pane.el.querySelector("tbody[data-path='0'] .tx-rshape")?.textContent;

describe("Ranks tab", () => {
  it("says how to show a plan until there is one", async () => {
    const { pane, kernel } = setup({});
    await pane.show();
    expect(pane.el.textContent).toContain("No plan shown.");
    expect(pane.el.textContent).toContain("tx.explore(model, x, ranks=plan)");
    expect(kernel.calls.filter((c) => c.kind === "ranks")).toHaveLength(0);
  });

  it("shows each rank's local shapes as the rank selector moves: 3, 3, 3, 1", async () => {
    const { pane, kernel, errors } = setup();
    await pane.show();
    await flush();
    expect(pane.el.querySelector(".tx-rverdict")?.textContent).toBe("4 ranks over mesh dp=4: 3 of 4 modules hold tensors or run collectives.");
    const seen: string[] = [];
    const input = pane.el.querySelector("input[aria-label=rank]") as HTMLInputElement;
    for (const r of [0, 1, 2, 3]) {
      input.value = String(r);
      input.dispatchEvent(new Event("input"));
      await flush();
      seen.push(shapeCell(pane) ?? "");
    }
    expect(seen).toEqual(["3×16 uneven", "3×16 uneven", "3×16 uneven", "1×16 uneven"]);
    expect(kernel.calls.filter((c) => c.kind === "ranks").map((c) => c.rank)).toEqual([0, 1, 2, 3]);
    expect(pane.el.textContent).toContain("What rank 3 holds and sends");
    expect(pane.el.querySelector(".tx-rspread")?.textContent).toContain("weight uneven: 3×16 on ranks 0-2, 1×16 on rank 3");
    // Model text is text: a class name with markup is shown as written.
    expect(pane.el.querySelector("tbody[data-path='0'] .tx-rmodule")?.textContent).toBe("0 (Linear <b>x</b>)");
    expect(pane.el.querySelector(".tx-rtable b")).toBeNull();
    expect([...pane.el.querySelectorAll(".tx-rcomm")].map((r) => r.textContent)).toEqual(["backward reduce_scatter ×2 on dp: 992 B", "forward all_gather ×1 on dp: 816 B"]);
    // A rank out of range is refused where it was typed; the rows stay.
    input.value = "7";
    input.dispatchEvent(new Event("input"));
    await flush();
    expect(pane.el.textContent).toContain("type a rank from 0 to 3");
    expect(kernel.calls.filter((c) => c.kind === "ranks")).toHaveLength(4);
    expect(errors).toEqual([]);
  });

  it("the memory table picks a rank, marks it, and compares every rank with a budget", async () => {
    const { pane, selected, model } = setup(state({ budget: 2800 }));
    await pane.show();
    await flush();
    const budget = pane.el.querySelector("input[aria-label='budget per rank']") as HTMLInputElement;
    expect(budget.value).toBe("2.7 KiB");
    expect(pane.el.querySelector(".tx-rfit")?.textContent).toContain("3 of 4 ranks do not fit");
    const rows = [...pane.el.querySelectorAll(".tx-rmem tbody tr")];
    expect(rows.map((r) => r.lastElementChild?.className)).toEqual(["tx-nofit", "tx-nofit", "tx-nofit", "tx-fit"]);
    (rows[3].querySelector("button") as HTMLButtonElement).click();
    await flush();
    expect(shapeCell(pane)).toBe("1×16 uneven");
    expect(pane.el.querySelector(".tx-rmem tr[aria-current=true] button")?.textContent).toBe("3");
    budget.value = "1 MB";
    budget.dispatchEvent(new Event("input"));
    expect(pane.el.querySelector(".tx-rfit")?.textContent).toBe(" every rank fits 976.6 KiB");
    budget.value = "lots";
    budget.dispatchEvent(new Event("input"));
    expect(pane.el.querySelector(".tx-rbudget .tx-bad")?.textContent).toContain("is not a size");
    // A module's name selects its row in the tree.
    (pane.el.querySelector("tbody[data-path='0'] .tx-rmodule") as HTMLButtonElement).click();
    expect(selected).toEqual(["0"]);
    // The module selected in the tree stands out in the table.
    model.set("selected", "0");
    await pane.show();
    expect([...pane.el.querySelectorAll(".tx-rsel")].map((b) => (b as HTMLElement).dataset.path)).toEqual(["0"]);
  });

  it("says a plan is stale after a patch, and plans again on request", async () => {
    const { pane, model, kernel } = setup(state({ stale: true, sharded: [], comms: [] }));
    await pane.show();
    expect(pane.el.querySelector(".tx-rstale")?.textContent).toContain("the model changed since this plan was made");
    const again = [...pane.el.querySelectorAll(".tx-rstale button")][0] as HTMLButtonElement;
    expect(again.textContent).toBe("Plan again");
    again.click();
    await flush();
    expect(kernel.calls.filter((c) => c.kind === "ranks_plan")).toHaveLength(1);
    expect(model.get("ranks_state").rev).toBe(2);
    await pane.show();
    expect(pane.el.querySelector(".tx-rstale")).toBeNull();
  });

  it("without the parallelize function: a sentence, no button", async () => {
    const note = "To plan again, run ex.ranks(parallelize, mesh={'dp': 4}) in the notebook with your parallelize function.";
    const { pane } = setup(state({ stale: true, can_replan: false, replan_note: note }));
    await pane.show();
    expect(pane.el.querySelector(".tx-rstale button")).toBeNull();
    expect(pane.el.querySelector(".tx-rstale")?.textContent).toContain(note);
  });

  it("in a read-only snapshot: memory from the state, rows need a kernel", async () => {
    const { pane, kernel } = setup(state(), true);
    await pane.show();
    expect(pane.el.textContent).toContain("need a kernel");
    expect(pane.el.querySelectorAll(".tx-rmem tbody tr")).toHaveLength(4);
    expect(kernel.calls.filter((c) => c.kind === "ranks")).toHaveLength(0);
  });

  it("helpers: badges, comm and spread text, headline", () => {
    const set: Record<string, Record<string, string>> = {};
    showRankBadges(state(), (source, b) => (set[source] = b));
    expect(set).toEqual({ "rank-shard": { "0": "sharded", "2": "sharded" }, "rank-comm": { "": "comms", "0": "comms" } });
    showRankBadges({}, (source, b) => (set[source] = b));
    expect(set).toEqual({ "rank-shard": {}, "rank-comm": {} });
    expect(commText({ phase: "forward", op: "all_gather", count: 3, bytes: 2048, mesh_dim: "" })).toBe("forward all_gather ×3: 2.0 KiB");
    expect(spreadText(rowsFor(0)[1].tensors[0])).toBe("uneven: 3×16 on ranks 0-2, 1×16 on rank 3");
    expect(headline({ status: "ok", world_size: 1, mesh: [{ name: "tp", size: 1 }], shown: 0, modules: 2 })).toBe("1 rank over mesh tp=1: 0 of 2 modules hold tensors or run collectives.");
  });
});
