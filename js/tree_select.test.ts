// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { FakeModel, fakeKernel, firstState, flush, type FakeNode } from "./fake_model";
import { createExplorer } from "./widget";
import { rangePaths } from "./tree_select";

const NET: FakeNode = {
  name: "",
  cls: "Net",
  kids: [
    { name: "fc1", cls: "Linear", params: 3 },
    { name: "act1", cls: "GELU" },
    { name: "fc2", cls: "Linear", params: 3 },
    { name: "act2", cls: "GELU" },
  ],
};

function mount(extra: Record<string, (m: Record<string, any>) => unknown> = {}) {
  const model = new FakeModel({ tree_state: firstState(NET) as never, selected: "", overview: {}, history: { entries: [], can_undo: false, can_redo: false, code: "" } as never });
  const kernel = fakeKernel(NET, extra);
  const el = document.createElement("div");
  document.body.appendChild(el);
  const ex = createExplorer({ model: model as never, el, experimental: { invoke: kernel.invoke } as never });
  return { ex, el, kernel, model };
}

const rows = (el: HTMLElement) => [...el.querySelectorAll<HTMLElement>("[role=treeitem]")];
const row = (el: HTMLElement, name: string) => rows(el).find((r) => r.getAttribute("aria-label")?.startsWith(`${name} `))!;

describe("rangePaths", () => {
  it("takes the module rows between two indices, in either order, skipping folds and more rows", () => {
    const list = [
      { item: { path: "a", name: "a", cls: "X", nkids: 0, params: 0 } },
      { item: { fold: 2, parent: "", start: 1, cls: "X", first: "b", last: "c" } },
      { item: { path: "d", name: "d", cls: "X", nkids: 0, params: 0 } },
      { item: null },
    ];
    expect(rangePaths(list, 2, 0)).toEqual(["a", "d"]);
    expect(rangePaths(list, 0, 99)).toEqual(["a", "d"]);
  });
});

describe("multi-select and the bulk bar", () => {
  it("ticks rows, extends with Shift+click and freezes the selection in one request", async () => {
    const { el, kernel } = mount({ bulk: () => ({ kind: "patched", id: 1, rev: 2 }), health: () => ({ kind: "health", nonfinite: [], probe_path: null, probe_note: "" }) });
    await flush();
    const box = row(el, "fc1").querySelector<HTMLInputElement>("input.tx-check")!;
    box.click();
    await flush();
    row(el, "act2").dispatchEvent(new MouseEvent("click", { bubbles: true, shiftKey: true }));
    await flush();
    expect(el.querySelector(".tx-bulk .tx-count")?.textContent).toBe("4 selected");
    expect(rows(el).filter((r) => r.classList.contains("tx-checked")).length).toBe(4);
    const freeze = [...el.querySelectorAll<HTMLButtonElement>(".tx-bulk button")].find((b) => b.textContent === "Freeze")!;
    freeze.click();
    await flush();
    expect(kernel.calls.find((c) => c.kind === "bulk")).toMatchObject({ kind: "bulk", op: "freeze", paths: ["fc1", "act1", "fc2", "act2"] });
  });

  it("offers every filter match and shows badges from the kernel's health check", async () => {
    const { el } = mount({
      pick: (m) => ({ kind: "pick", paths: m.query === "gelu" ? ["act1", "act2"] : [] }),
      health: () => ({ kind: "health", nonfinite: ["fc2"], probe_path: "act2", probe_note: "non-finite values: first in the outputs of act2 (GELU)" }),
    });
    await flush();
    await new Promise((r) => setTimeout(r, 200));
    await flush();
    expect(row(el, "fc2").querySelector(".tx-badge-nan")?.textContent).toBe("NaN/Inf");
    expect(row(el, "act2").querySelector(".tx-badge-nonfinite")).not.toBeNull();
    expect(el.querySelector(".tx-nonfinite")?.textContent).toContain("act2");
    const input = el.querySelector<HTMLInputElement>("input.tx-filter")!;
    input.value = "gelu";
    input.dispatchEvent(new Event("input"));
    await new Promise((r) => setTimeout(r, 300));
    await flush();
    const all = el.querySelector<HTMLButtonElement>(".tx-selectbar > .tx-link")!;
    expect(all.hidden).toBe(false);
    expect(all.textContent).toBe("select all 2 matches");
    all.click();
    expect(el.querySelector(".tx-bulk .tx-count")?.textContent).toBe("2 selected");
  });
});
