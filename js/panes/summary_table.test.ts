// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { parseSummary, summaryView } from "./summary_table";

// tx.summary(M(), torch.randn(2, 3, 4)) for a Linear+ReLU encoder and an LSTM (_summary/text.py).
const PROBED = `M: 5 modules; probe ok (fake)
================================================
Layer (type)         Output shape        Param #
================================================
M                    [0]: [2, 3, 8]      --
│                    [1][0]: [1, 2, 8]
│                    [1][1]: [1, 2, 8]
├─enc (Sequential)   [2, 3, 8]           --
│ ├─0 (Linear)       [2, 3, 8]           40
│ └─1 (ReLU)         [2, 3, 8]           --
└─lstm (LSTM)        [0]: [2, 3, 8]      576
                     [1][0]: [1, 2, 8]
                     [1][1]: [1, 2, 8]
================================================
Total params: 616
Trainable params: 616
================================================
Estimated total size: 3.58 kB (3,584 bytes)
================================================`;

const UNPROBED = `M: 5 modules; no probe
============================
Layer (type)         Param #
============================
M                    --
└─lstm (LSTM)        576
============================
Total params: 616
============================`;

describe("the summary shown as a table", () => {
  it("reads the columns where the header names them, a row's further outputs under it", () => {
    const g = parseSummary(PROBED)!;
    expect(g.before).toEqual(["M: 5 modules; probe ok (fake)"]);
    expect(g.outputs).toBe(true);
    expect(g.rows.map((r) => r.label)).toEqual(["M", "├─enc (Sequential)", "│ ├─0 (Linear)", "│ └─1 (ReLU)", "└─lstm (LSTM)"]);
    expect(g.rows[0].outputs).toEqual(["[0]: [2, 3, 8]", "[1][0]: [1, 2, 8]", "[1][1]: [1, 2, 8]"]);
    expect(g.rows[4]).toEqual({ label: "└─lstm (LSTM)", outputs: ["[0]: [2, 3, 8]", "[1][0]: [1, 2, 8]", "[1][1]: [1, 2, 8]"], params: "576" });
    expect(g.rows[2].params).toBe("40");
    expect(g.after[0]).toBe("Total params: 616");
  });

  it("has no output column without a probe, and leaves other text alone", () => {
    const g = parseSummary(UNPROBED)!;
    expect(g.outputs).toBe(false);
    expect(g.rows).toEqual([
      { label: "M", outputs: [], params: "--" },
      { label: "└─lstm (LSTM)", outputs: [], params: "576" },
    ]);
    expect(parseSummary("Net: 2 modules\n===\nNet  [2, 3]  --")).toBeNull();
    expect(parseSummary(PROBED.split("\n").slice(0, 8).join("\n"))).toBeNull(); // cut before its closing rule
  });

  it("draws Param # as a column of its own, the class after a break, as text", () => {
    const el = summaryView(parseSummary(PROBED)!);
    const heads = [...el.querySelectorAll("th")].map((t) => t.textContent);
    expect(heads).toEqual(["Layer (type)", "Output shape", "Param #"]);
    const last = [...el.querySelectorAll("tbody tr")][4];
    const cells = [...last.querySelectorAll("td")];
    expect(cells.map((c) => c.textContent)).toEqual(["└─lstm (LSTM)", "[0]: [2, 3, 8][1][0]: [1, 2, 8][1][1]: [1, 2, 8]", "576"]);
    expect(cells[0].querySelectorAll(".tx-nobr").length).toBe(2);
    expect(cells[1].querySelectorAll("br").length).toBe(2);
    expect(el.querySelector(".tx-sumafter")?.textContent).toBe("Total params: 616\nTrainable params: 616\nEstimated total size: 3.58 kB (3,584 bytes)");
    const odd = summaryView({ before: [], outputs: false, rows: [{ label: "<b>x</b>", outputs: [], params: "1" }], after: [] });
    expect(odd.querySelector("b")).toBeNull();
  });
});
