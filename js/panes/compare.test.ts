// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { FakeModel, fakeKernel, firstState, flush, type FakeNode } from "../fake_model";
import { Rpc } from "../protocol";
import type { Ctx } from "./context";
import { DiffPane, relText } from "./diff";
import { num, sparkline, statsSection } from "./stats";

const NET: FakeNode = { name: "", cls: "Net", kids: [{ name: "fc", cls: "Linear", params: 3 }] };

function ctx(extra: Record<string, (m: Record<string, any>) => unknown>, selected: string[] = []): Ctx {
  const model = new FakeModel({ selected: "fc", tree_state: firstState(NET) as never });
  const kernel = fakeKernel(NET, extra);
  return {
    rpc: new Rpc(kernel.invoke as never),
    model: model as never,
    readonly: false,
    run: async (_label, fn) => fn(),
    error: () => undefined,
    select: (p) => void selected.push(p),
  };
}

describe("stats", () => {
  it("draws one bar per bin with SVG elements, scaled to the largest", () => {
    const svg = sparkline([0, 5, 10], "hist");
    const rects = [...svg.querySelectorAll("rect")];
    expect(rects.map((r) => r.getAttribute("height"))).toEqual(["0.00", "10.00", "20.00"]);
    expect(svg.namespaceURI).toBe("http://www.w3.org/2000/svg");
    expect(num(null)).toBe("—");
    expect(num(1e-6)).toBe("1.00e-6");
  });

  it("fills the Overview's weights table and marks non-finite counts", async () => {
    const c = ctx({
      stats: () => ({
        kind: "stats",
        path: "fc",
        rows: [{ name: "weight", shape: "2×3", dtype: "float32", numel: 6, norm: 1, mean: 0, std: 1, min: -1, max: 1, zeros: 0, nonfinite: 2, hist: [1, 2, 3], skipped: null }],
      }),
    });
    const box = statsSection(c, "fc");
    await flush();
    const cells = [...box.querySelectorAll("tbody td")].map((td) => td.textContent);
    expect(cells[0]).toBe("weight");
    expect(cells.at(-1)).toBe("2");
    expect(box.querySelector("tbody tr")?.classList.contains("tx-nonfinite-row")).toBe(true);
    expect(box.querySelectorAll("svg rect").length).toBe(3);
  });
});

describe("DiffPane", () => {
  it("lists changes with their relative change, sends badges to the tree, selects a row's module", async () => {
    const selected: string[] = [];
    let badges: Record<string, string> = {};
    const c = ctx(
      {
        diff: () => ({
          kind: "diff",
          label: "the model when the explorer opened",
          rows: [{ path: "fc.weight", kind: "values", detail: "float32 (2, 3)", rel_change: 0.5, module: "fc" }],
          total: 1,
          badges: { fc: "values" },
          counts: { values: 1 },
        }),
      },
      selected,
    );
    const pane = new DiffPane(c, (b) => (badges = b));
    await pane.show();
    expect(badges).toEqual({ fc: "values" });
    expect(pane.el.querySelector(".tx-diffsum")?.textContent).toContain("1 values");
    const cells = [...pane.el.querySelectorAll("tbody td")].map((td) => td.textContent);
    expect(cells).toEqual(["fc.weight", "values", "float32 (2, 3)", "0.5000"]);
    pane.el.querySelector<HTMLButtonElement>("tbody button")!.click();
    expect(selected).toEqual(["fc"]);
    expect(relText(0)).toBe("0");
    expect(relText(2e-5)).toBe("2.00e-5");
  });

  it("shows a checkpoint error as text and clears the badges", async () => {
    let badges: Record<string, string> = { fc: "values" };
    const c = ctx({ diff: () => ({ kind: "error", message: "diff failed: FileNotFoundError: no checkpoint file at 'x.pt'" }) });
    const pane = new DiffPane(c, (b) => (badges = b));
    await pane.compare();
    expect(pane.el.querySelector("[role=alert]")?.textContent).toContain("no checkpoint file");
    expect(badges).toEqual({});
  });
});
