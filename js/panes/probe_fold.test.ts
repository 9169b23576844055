import { describe, expect, it } from "vitest";
import { foldRuns, isProbeFold } from "./probe_fold";

const row = (path: string, cls = "Conv2d", outputs = "2×16", status = "same") => ({ path, cls, calls: 1, inputs: "2×16", outputs, status });

describe("probe folds", () => {
  const rows = [
    row("", "Net"),
    row("layer1", "Sequential"),
    row("layer1.0", "Block"),
    row("layer1.0.conv"),
    row("layer1.1", "Block"),
    row("layer1.1.conv"),
    row("layer1.2", "Block"),
    row("layer1.2.conv"),
    row("layer1.10", "Block"),
    row("layer1.10.conv", "Conv2d", "2×32"),
    row("fc", "Linear"),
    row("head", "Linear"),
  ];

  it("folds a run of identical blocks, and stops at the first block that differs", () => {
    const lines = foldRuns(rows, new Set());
    const folds = lines.filter(isProbeFold);
    expect(folds).toHaveLength(1);
    expect(folds[0].key).toBe("layer1.0");
    expect(folds[0].count).toBe(3);
    expect(folds[0].rows.map((r) => r.path)).toEqual(["layer1.0", "layer1.0.conv", "layer1.1", "layer1.1.conv", "layer1.2", "layer1.2.conv"]);
    // layer1.10 differs (its conv's output), and single modules (fc, head) never fold.
    expect(lines.filter((l) => !isProbeFold(l)).map((l) => (l as { path: string }).path)).toEqual(["", "layer1", "layer1.10", "layer1.10.conv", "fc", "head"]);
  });

  it("an opened fold is followed by its rows; a changed block breaks the run", () => {
    const open = foldRuns(rows, new Set(["layer1.0"]));
    expect(open.length).toBe(rows.length + 1);
    const changed = rows.map((r) => (r.path === "layer1.1.conv" ? { ...r, status: "changed" } : r));
    const folds = foldRuns(changed, new Set()).filter(isProbeFold);
    expect(folds).toHaveLength(0);
  });
});
