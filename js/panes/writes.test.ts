// @vitest-environment happy-dom
// What a forward writes to itself (issue 39): the row's "writes" badge and the Overview's "Its
// forward writes" section, names from the model as text, never HTML.
import { describe, expect, it } from "vitest";
import { FakeModel } from "../fake_model";
import { Rpc, type NodeRow } from "../protocol";
import { rowCells, rowLabel } from "../tree_row";
import { OverviewPane } from "./overview";

const row = (writes?: string[]): NodeRow => ({ path: "0", name: "0", cls: "Counting", nkids: 1, params: 20, ...(writes ? { writes } : {}) });

function overview(path: string, writes: string[]) {
  const model = new FakeModel({
    selected: path,
    overview: { path, name: path, cls: "Counting", qualname: "__main__.Counting", params_total: 20, params_own: 0, trainable_total: 20, bytes_total: 80, bytes_local: 80, placement: "cpu", devices: ["cpu"], dtypes: ["float32"], hooks: [], probe: null, writes } as never,
  });
  const pane = new OverviewPane({ rpc: new Rpc(null), model: model as never, readonly: true, run: async (_l, fn) => fn(), error: () => undefined, select: () => undefined });
  pane.show();
  document.body.replaceChildren(pane.el);
  return pane.el;
}

describe("the writes of a forward", () => {
  it("badge the row, its tooltip and accessible name listing them", () => {
    const el = document.createElement("div");
    el.append(...rowCells(row(["writes self.seen", "writes self.calls"])));
    const badge = el.querySelector(".tx-mark-writes") as HTMLElement;
    expect(badge.textContent).toBe("writes");
    expect(badge.title).toContain("writes self.seen, self.calls");
    expect(rowLabel(row(["writes self.seen", "writes self.calls"]))).toBe("0 Counting, writes self.seen, self.calls");
    // No writes: no badge, the plain name.
    const plain = document.createElement("div");
    plain.append(...rowCells(row()));
    expect(plain.querySelector(".tx-mark-writes")).toBeNull();
    expect(rowLabel(row())).toBe("0 Counting");
  });

  it("show an attribute named like markup as those characters", () => {
    const el = document.createElement("div");
    el.append(...rowCells(row(["writes self.<script>alert(1)</script>"])));
    expect(el.querySelector("script")).toBeNull();
    expect((el.querySelector(".tx-mark-writes") as HTMLElement).title).toContain("writes self.<script>alert(1)</script>");
    const pane = overview("0", ["writes 0.<script>alert(1)</script> (attribute: set to 1)"]);
    expect(pane.querySelector("script")).toBeNull();
    expect(pane.querySelector(".tx-writes li")?.textContent).toBe("writes 0.<script>alert(1)</script> (attribute: set to 1)");
  });

  it("list each on the Overview with what that means", () => {
    const pane = overview("0", ["writes 0.seen (container: 1 item added)", "writes 0.calls (counter: 0 -> 1)"]);
    const section = pane.querySelector('section[aria-label="Its forward writes"]') as HTMLElement;
    expect(section.querySelector("h4")?.textContent).toBe("Its forward writes");
    expect(section.textContent).toContain("torchxray put these back after the probe; torch.compile has to handle them too");
    expect([...section.querySelectorAll("li")].map((li) => li.textContent)).toEqual([
      "writes 0.seen (container: 1 item added)",
      "writes 0.calls (counter: 0 -> 1)",
    ]);
    // What could not be put back changes the sentence; no writes, no section.
    const file = overview("", ["writes /tmp/log.txt (file: opened /tmp/log.txt for writing) (not put back)"]);
    expect(file.querySelector(".tx-writes")?.textContent).toContain("put back what it could");
    expect(overview("0", []).querySelector(".tx-writes")).toBeNull();
  });
});
