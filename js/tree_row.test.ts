// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { rowCells, splitOut } from "./tree_row";

describe("a tree row's output", () => {
  it("splits into the output's name, which may give way, and its shape, which is never cut", () => {
    expect(splitOut("last_hidden_state: 1×16×128 +4")).toEqual({ name: "last_hidden_state:", dims: "1×16×128 +4" });
    expect(splitOut("[0]: 1×16×32 +1")).toEqual({ name: "[0]:", dims: "1×16×32 +1" });
    expect(splitOut("2×10")).toEqual({ name: "", dims: "2×10" });
    expect(splitOut("")).toEqual({ name: "", dims: "" });
  });

  it("draws them as two cells, the shape the one the header's column lines up with", () => {
    const item = { path: "", name: "", cls: "LlamaModel", nkids: 3, params: 10, out: "last_hidden_state: 1×16×128 +4", out_all: "a\nb" };
    const cells = rowCells(item as never);
    const name = cells.find((c) => c.classList.contains("tx-shape-name"))!;
    const dims = cells.find((c) => c.classList.contains("tx-shape"))!;
    expect([name.textContent, dims.textContent]).toEqual(["last_hidden_state:", "1×16×128 +4"]);
    expect(dims.classList.contains("tx-shape-dims")).toBe(true);
    expect(dims.title).toContain("outputs (last probe)");
    const bare = rowCells({ path: "fc", name: "fc", cls: "Linear", nkids: 0, params: 1, out: "2×10" } as never);
    expect(bare.some((c) => c.classList.contains("tx-shape-name"))).toBe(false);
  });
});
