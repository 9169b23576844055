// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { FakeModel, fakeKernel, firstState, flush, paneCtx, type FakeNode } from "../fake_model";
import type { ExportIssueRow, ExportState } from "../protocol";
import { driftFigures, driftHeat } from "../tree_color";
import { ExportPane, exportBadges, exportVerdict, issuesUnder } from "./export";

const NET: FakeNode = {
  name: "",
  cls: "ExportNet",
  kids: [
    { name: "proj", cls: "OrthoLinear" },
    { name: "mixer", cls: "RunningMax" },
    { name: "mlp", cls: "GatedMLP", kids: [{ name: "fc1", cls: "Linear" }] },
  ],
};

const QR: ExportIssueRow = {
  target: "onnx", path: "proj", cls: "OrthoLinear", op: "aten.linalg_qr.default", kind: "no ONNX translation",
  reason: "No decompositions registered for the <b>real</b>-valued input", file: "/src/torchxray/demo.py", line: 375,
  source: "q, _ = torch.linalg.qr(self.weight)", count: 1, blocking: true, src_cls: "torchxray.demo.OrthoLinear",
};
const BRANCH: ExportIssueRow = { ...QR, target: "export", path: "mlp", cls: "GatedMLP", op: "Eq(u0, 1)", kind: "data-dependent control flow", line: 404, src_cls: null, file: "/x/helpers.py" };
const PORTABLE: ExportIssueRow = { ...QR, target: "executorch", op: "aten.mean.dim", kind: "not delegated to XNNPACK", count: 2, blocking: false };

function state(extra: Partial<ExportState> = {}): ExportState {
  return {
    status: "fails", stale: false, mode: "real", asked: ["export", "onnx"],
    targets: [
      { target: "export", status: "fails", message: "1 failure(s)", seconds: 0.4, delegated: 0, portable: 0 },
      { target: "onnx", status: "fails", message: "1 op(s) without an ONNX translation", seconds: 1.2, delegated: 0, portable: 0 },
    ],
    issues: [BRANCH, QR, PORTABLE],
    rows: { "": { export: "fails", onnx: "fails" }, proj: { export: "ok", onnx: "fails" }, mixer: { export: "ok", onnx: "ok" }, mlp: { export: "fails", onnx: "ok" } },
    drift: { mixer: [2e-7, 1e-7], "": [3e-6, 1e-6] }, changes: [], error: "", notes: ["a note"], wall_ms: 1500, rev: 1, ...extra,
  };
}

function setup(reply: () => unknown) {
  const errors: string[] = [];
  const selected: string[] = [];
  const opened: [string, string | null, number][] = [];
  const badges: Record<string, string>[] = [];
  const coloured: string[] = [];
  const model = new FakeModel({ selected: "", tree_state: firstState(NET) as never });
  const kernel = fakeKernel(NET, {
    export: () => {
      const r = reply() as Record<string, unknown>;
      if (r.kind !== "error") model.set("export_state", { ...r, kind: undefined });
      return r;
    },
  });
  const ctx = paneCtx(kernel, model, false, errors, { select: (p) => selected.push(p), openSource: (p, c, l) => opened.push([p, c, l]) });
  const pane = new ExportPane(ctx, (b) => badges.push(b), (f) => coloured.push(f));
  return { pane, model, kernel, errors, selected, opened, badges, coloured };
}

describe("Export tab", () => {
  it("runs the targets ticked, then lists every failing op as text with its module and line", async () => {
    const { pane, kernel, errors } = setup(() => ({ kind: "export", ...state() }));
    pane.show();
    expect(pane.el.textContent).toContain("Not checked yet.");
    const onnx = [...pane.el.querySelectorAll("label")].find((l) => l.textContent === " executorch")?.querySelector("input") as HTMLInputElement;
    onnx.checked = true;
    (pane.el.querySelector("button.tx-primary") as HTMLButtonElement).click();
    await flush();
    expect(errors).toEqual([]);
    expect(kernel.calls.filter((c) => c.kind === "export")).toEqual([{ kind: "export", targets: ["export", "onnx", "executorch"] }]);
    expect(pane.el.querySelector(".tx-cverdict")?.textContent).toBe("2 issues block export:");
    const items = [...pane.el.querySelectorAll(".tx-xissues > li")];
    expect(items.map((li) => li.querySelector(".tx-cmodule")?.textContent)).toEqual(["mlp (GatedMLP)", "proj (OrthoLinear)"]);
    expect(items[1].querySelector(".tx-breakreason")?.textContent).toBe(QR.reason); // text, not markup
    expect(items[1].querySelector("b")).toBeNull();
    expect(pane.el.querySelector(".tx-xportable summary")?.textContent).toBe("2 op(s) left to ExecuTorch's portable kernels (not delegated to XNNPACK)");
    expect([...pane.el.querySelectorAll(".tx-xtable tbody tr")].map((r) => r.firstChild?.textContent)).toEqual(["export", "onnx"]);
  });

  it("a failing op's line opens the Source tab; its module selects the row", () => {
    const { pane, model, selected, opened } = setup(() => null);
    model.set("export_state", state());
    pane.show();
    const qr = [...pane.el.querySelectorAll(".tx-xissues > li")][1];
    (qr.querySelector(".tx-cwhere") as HTMLButtonElement).click();
    expect(opened).toEqual([["proj", "torchxray.demo.OrthoLinear", 375]]);
    (qr.querySelector(".tx-cmodule") as HTMLButtonElement).click();
    expect(selected).toEqual(["proj"]);
    const branch = [...pane.el.querySelectorAll(".tx-xissues > li")][0];
    expect(branch.querySelector(".tx-cwhere")?.tagName).toBe("SPAN"); // no class holds it: not a link
  });

  it("shows the selected row's verdicts, drift and failing ops", () => {
    const { pane, model } = setup(() => null);
    model.set("export_state", state());
    model.set("selected", "proj");
    pane.show();
    const sel = pane.el.querySelector(".tx-xselected") as HTMLElement;
    expect(sel.textContent).toContain("export: ok");
    expect(sel.textContent).toContain("onnx: fails");
    expect(sel.querySelectorAll(".tx-xmine li")).toHaveLength(1);
    model.set("selected", "mixer");
    pane.show();
    expect(pane.el.querySelector(".tx-xselected")?.textContent).toContain("drift in onnxruntime: max abs 2.0e-7");
  });

  it("marks the rows for the target picked, none while stale, and says a patch made it stale", () => {
    const { pane, model, badges, coloured } = setup(() => null);
    model.set("export_state", state());
    pane.syncBadges();
    expect(badges.at(-1)).toEqual({ "": "x-fails", proj: "x-fails", mixer: "x-ok", mlp: "x-ok" });
    pane.shown.value = "export";
    pane.shown.dispatchEvent(new Event("change"));
    expect(badges.at(-1)).toEqual({ "": "x-fails", proj: "x-ok", mixer: "x-ok", mlp: "x-fails" });
    model.set("export_state", state({ stale: true, changes: ["fixed: [onnx] proj (OrthoLinear): no ONNX translation: aten.linalg_qr.default"] }));
    pane.syncBadges();
    expect(badges.at(-1)).toEqual({});
    pane.show();
    expect(pane.el.querySelector(".tx-xstale")?.textContent).toContain("The model changed since this check");
    expect(pane.el.querySelector(".tx-xchanges")?.textContent).toContain("fixed: [onnx] proj");
    const colour = [...pane.el.querySelectorAll("button")].find((b) => b.textContent === "colour the tree by drift") as HTMLButtonElement;
    colour.click();
    expect(coloured).toEqual(["drift"]);
  });

  it("helpers: verdicts, badges per target, subtree issues, drift as a figure", () => {
    expect(exportVerdict({ status: "ok", asked: ["export", "onnx"] })).toBe("Every target checked takes the model (export, onnx).");
    expect(exportVerdict({})).toBe("Not checked yet.");
    expect(exportBadges({ status: "ok", rows: { a: { executorch: "partly delegated" }, b: { executorch: "portable" } } }, "executorch")).toEqual({ a: "x-partly", b: "x-portable" });
    expect(issuesUnder([QR, BRANCH], "mlp").map((i) => i.path)).toEqual(["mlp"]);
    expect(issuesUnder([QR, BRANCH], "").length).toBe(2);
    const fig = driftFigures(state(), ["mixer", "proj"]);
    expect(fig.values).toEqual({ mixer: 2e-7, proj: null });
    expect(driftFigures({}, ["a"]).note).toContain("run the Export tab's check");
    expect(driftHeat(1e-9)).toBe("hsl(220 80% 52%)");
    expect(driftHeat(10)).toBe("hsl(0 80% 52%)");
  });
});
