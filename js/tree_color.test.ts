// @vitest-environment happy-dom
import { beforeEach, describe, expect, it } from "vitest";
import { FakeModel, fakeKernel, firstState, flush, type FakeNode } from "./fake_model";
import type { NodeRow } from "./protocol";
import { STOPS, TreeColor, heat } from "./tree_color";
import { placeShort, rowCells } from "./tree_row";
import { createExplorer } from "./widget";

const row = (path: string): NodeRow => ({ path, name: path, cls: "Linear", nkids: 0, params: 1 });
const rowEl = (item: NodeRow) => {
  const el = document.createElement("div");
  el.append(...rowCells(item));
  return el;
};
const wait = () => new Promise((r) => setTimeout(r, 60));

describe("TreeColor", () => {
  it("asks only for the rows it was given, once, and paints them by their share", async () => {
    const asked: string[][] = [];
    let redraws = 0;
    const color = new TreeColor(
      async (figure, paths) => {
        asked.push(paths);
        const values = Object.fromEntries(paths.map((p) => [p, p === "b" ? null : p === "a" ? 50 : 1]));
        return { kind: "figures", figure, values, total: 100, note: "" };
      },
      () => (redraws += 1),
      () => undefined,
    );
    const a = rowEl(row("a"));
    color.paint(a, row("a")); // no figure chosen: nothing asked, nothing drawn
    await wait();
    expect(asked).toEqual([]);
    color.select.value = "params";
    color.select.dispatchEvent(new Event("change"));
    for (const p of ["a", "b", "c"]) color.paint(rowEl(row(p)), row(p));
    color.paint(rowEl(row("a")), row("a")); // drawn twice before the answer: asked once
    await wait();
    expect(asked).toEqual([["a", "b", "c"]]);
    expect(redraws).toBe(2); // the select's change, then the answer
    const painted = rowEl(row("a"));
    color.paint(painted, row("a"));
    const sw = painted.querySelector(".tx-heat") as HTMLElement;
    expect(sw.nextElementSibling?.classList.contains("tx-name")).toBe(true);
    expect(sw.title).toBe("parameters: 50 (50% of the model)");
    expect(sw.style.background).toBe(heat(0.5));
    const unknown = rowEl(row("b"));
    color.paint(unknown, row("b"));
    expect(unknown.querySelector(".tx-heat-none")?.getAttribute("title")).toBe("parameters: not known");
    expect(color.el.textContent).toContain("share of the model's parameters");
    expect(color.el.querySelectorAll(".tx-legend .tx-stop").length).toBe(STOPS.length + 1);
    expect(asked.length).toBe(1);
  });

  it("runs blue to red on a log scale and shows the kernel's note", async () => {
    expect(heat(1)).toBe("hsl(0 80% 52%)");
    expect(heat(0.0001)).toBe("hsl(220 80% 52%)");
    expect(heat(0.01)).toBe("hsl(110 80% 52%)");
    const color = new TreeColor(
      async (figure, paths) => ({ kind: "figures", figure, values: Object.fromEntries(paths.map((p) => [p, null])), total: null, note: "fake probes measure no time" }),
      () => undefined,
      () => undefined,
    );
    color.select.value = "time";
    color.select.dispatchEvent(new Event("change"));
    color.paint(rowEl(row("a")), row("a"));
    await wait();
    expect(color.el.textContent).toContain("fake probes measure no time");
  });
});

describe("rows", () => {
  it("show an unusual placement as a badge and why a module was not called", () => {
    const el = rowEl({ ...row("attn"), placement: "offloaded: disk (runs on cpu)", not_called: "the fused fast path of nn.TransformerEncoderLayer" });
    const badge = el.querySelector(".tx-mark-place") as HTMLElement;
    expect(badge.textContent).toBe("offloaded: disk");
    expect(badge.title).toBe("placement: offloaded: disk (runs on cpu)");
    const shape = el.querySelector(".tx-notcalled") as HTMLElement;
    expect(shape.textContent).toBe("not called");
    expect(shape.title).toContain("fused fast path");
    expect(placeShort("DTensor Shard(0) on mesh (4,)")).toBe("DTensor Shard(0)");
    expect(placeShort("cpu; offloaded: disk (runs on cpu)")).toBe("mixed");
    expect(rowEl(row("plain")).querySelector(".tx-mark-place, .tx-notcalled")).toBeNull();
  });
});

const NET: FakeNode = {
  name: "",
  cls: "Net",
  kids: [
    { name: "conv1", cls: "Conv2d", params: 224 },
    { name: "fc", cls: "Linear", params: 16 },
  ],
};

describe("Explorer tree colouring", () => {
  beforeEach(() => {
    document.body.innerHTML = "";
  });
  it("colours the drawn rows from one figures request and has a Memory tab", async () => {
    const asked: Record<string, any>[] = [];
    const model = new FakeModel({ tree_state: firstState(NET) as never, selected: "", overview: {} as never, history: { entries: [], can_undo: false, can_redo: false, code: "" }, busy: "", error: "", readonly: false, snapshot: {} });
    const kernel = fakeKernel(NET, {
      figures: (m) => {
        asked.push(m);
        const values = Object.fromEntries(m.paths.map((p: string) => [p, p === "" ? 240 : p === "conv1" ? 224 : 16]));
        return { kind: "figures", figure: m.figure, values, total: 240, note: "" };
      },
    });
    const el = document.createElement("div");
    document.body.appendChild(el);
    const ex = createExplorer({ model: model as never, el, experimental: { invoke: kernel.invoke as never } });
    await flush();
    expect([...el.querySelectorAll('[role="tab"]')].map((t) => t.textContent)).toContain("Memory");
    const select = el.querySelector('select[aria-label="colour the tree by"]') as HTMLSelectElement;
    select.value = "params";
    select.dispatchEvent(new Event("change"));
    await wait();
    await flush();
    expect(asked.length).toBe(1);
    expect(asked[0]).toMatchObject({ kind: "figures", figure: "params" });
    expect(new Set(asked[0].paths)).toEqual(new Set(["", "conv1", "fc"]));
    const swatches = [...el.querySelectorAll(".tx-tree .tx-heat")] as HTMLElement[];
    expect(swatches.map((s) => s.title)).toEqual([
      "parameters: 240 (100% of the model)",
      "parameters: 224 (93% of the model)",
      "parameters: 16 (7% of the model)",
    ]);
    model.set("tree_state", firstState(NET, 2)); // the model changed: values are asked again
    await wait();
    await flush();
    expect(asked.length).toBe(2);
    ex.dispose();
  });
});
