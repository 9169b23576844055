// @vitest-environment happy-dom
import { beforeEach, describe, expect, it, vi } from "vitest";
import { FakeModel, fakeKernel, firstState, flush, type FakeNode } from "./fake_model";
import { createExplorer, TABS } from "./widget";

const NET: FakeNode = {
  name: "",
  cls: "Net",
  kids: [
    { name: "conv1", cls: "Conv2d", params: 224 },
    { name: "bn1", cls: "BatchNorm2d", params: 16 },
  ],
};

const OK = { ok: true, mode: "fake", status: "probe ok: 3 modules", count: 3, error: null, changed: 0, rev: 1 };
const FAILED = {
  ok: false,
  mode: "fake",
  status: "probe failed at bn1: RuntimeError: running_mean should contain 16 elements not 8",
  count: 2,
  error: { path: "bn1", cls: "BatchNorm2d", exc_type: "RuntimeError", message: "running_mean…", hint: "", input_shapes: "1×16×8×8" },
  changed: 1,
  rev: 2,
};

const FORM = {
  kind: "form",
  path: "conv1",
  cls: "Conv2d",
  qualname: "torch.nn.modules.conv.Conv2d",
  rev: 1,
  aliases: [],
  fields: [
    { name: "in_channels", kind: "int", text: "3", default: null, required: true, choices: [], origin: "attribute", annotation: "int", optional: false },
    { name: "out_channels", kind: "int", text: "8", default: null, required: true, choices: [], origin: "attribute", annotation: "int", optional: false },
    { name: "bias", kind: "bool", text: "True", default: "True", required: false, choices: [], origin: "derived", annotation: "bool", optional: false },
    { name: "padding_mode", kind: "choice", text: "zeros", default: "'zeros'", required: false, choices: ["zeros", "reflect"], origin: "attribute", annotation: "str", optional: false },
    { name: "device", kind: "device", text: "cpu", default: "None", required: false, choices: [], origin: "default", annotation: "", optional: true },
  ],
};

function setup(extra: Record<string, (m: Record<string, any>) => unknown> = {}) {
  const model = new FakeModel({
    tree_state: firstState(NET) as never,
    selected: "",
    overview: { path: "", name: "", cls: "Net", qualname: "m.Net", params_total: 240, params_own: 0, trainable_total: 240, bytes_total: 960, devices: ["cpu"], dtypes: ["float32"], hooks: [], extra_repr: "<b>bold</b>" },
    probe_summary: OK as never,
    history: { entries: [], can_undo: false, can_redo: false, code: "" },
    busy: "",
    error: "",
    probe_mode: "fake",
    readonly: false,
    snapshot: {},
  });
  const kernel = fakeKernel(NET, {
    form: () => FORM,
    source: () => ({ kind: "source", html: '<div class="tx-src"><pre><span class="hll">x = 1</span></pre></div>', file: "conv.py", line: 10, reason: null, qualname: "torch.nn.Conv2d", forward_lines: [20, 30] }),
    ...extra,
  });
  const el = document.createElement("div");
  document.body.appendChild(el);
  const ex = createExplorer({ model: model as never, el, experimental: { invoke: kernel.invoke as never } });
  return { model, kernel, ex, el };
}

const byRole = (el: HTMLElement, role: string, name?: string) =>
  [...el.querySelectorAll(`[role="${role}"]`)].filter(
    (e) => name === undefined || e.textContent === name || e.getAttribute("aria-label") === name,
  ) as HTMLElement[];
const button = (el: HTMLElement, name: string) =>
  [...el.querySelectorAll("button")].find((b) => b.textContent === name) as HTMLButtonElement;

describe("Explorer widget", () => {
  beforeEach(() => {
    document.body.innerHTML = "";
  });

  it("has the six named tabs and announces the probe in a status", async () => {
    const { el, model } = setup();
    await flush();
    expect(byRole(el, "tab").map((t) => t.textContent)).toEqual([...TABS]);
    expect(byRole(el, "tab", "Overview")[0].getAttribute("aria-selected")).toBe("true");
    const [status] = byRole(el, "status");
    expect(status.textContent).toBe("probe ok: 3 modules");
    model.set("probe_summary", FAILED);
    expect(status.textContent).toContain("probe failed at bn1");
    expect(byRole(el, "status")).toHaveLength(1);
  });

  it("offers the real probe in the header where a fake probe met a data-dependent op", async () => {
    const { el, model, kernel } = setup({ probe: () => ({ kind: "probe", ok: true, status: "probe ok" }) });
    await flush();
    const header = el.querySelector(".tx-header") as HTMLElement;
    const real = () => [...header.querySelectorAll("button")].find((b) => b.textContent === "Run real probe") as HTMLButtonElement;
    expect(real().hidden).toBe(true);
    const status = "probe failed at rpn: a fake probe cannot run aten.nonzero: its output size depends on the values; run a real probe";
    const error = { ...FAILED.error, path: "rpn", remedy: "real" };
    model.set("probe_summary", { ...FAILED, status, error });
    expect(byRole(el, "status")[0].textContent).toBe(status);
    expect(real().hidden).toBe(false);
    real().click();
    await flush();
    expect(kernel.calls.at(-1)).toEqual({ kind: "probe", mode: "real" });
    expect(model.get("probe_mode")).toBe("real");
    model.set("probe_summary", { ...FAILED, status, error, mode: "real" });
    expect(real().hidden).toBe(true); // the real probe failed too: nothing more to offer
  });

  it("renders the overview as text, never HTML", async () => {
    const { el } = setup();
    await flush();
    expect(el.querySelector("b")).toBeNull();
    expect(el.textContent).toContain("<b>bold</b>");
  });

  it("selecting a row asks the kernel and switches panes on the selected traitlet", async () => {
    const { el, kernel, model } = setup();
    await flush();
    byRole(el, "treeitem", "bn1 BatchNorm2d")[0].click();
    await new Promise((r) => setTimeout(r, 120));
    // The tree also asks which rows in view hold NaN weights (health): not this flow.
    expect(kernel.calls.filter((c) => c.kind !== "health").at(-1)).toEqual({ kind: "select", path: "bn1" });
    // The kernel answers by setting the traitlets; Python-side select does the same.
    model.set("selected", "conv1");
    await flush();
    const sel = byRole(el, "treeitem").find((r) => r.getAttribute("aria-selected") === "true");
    expect(sel?.getAttribute("aria-label")).toBe("conv1 Conv2d");
  });

  it("Form tab: labelled inputs, Apply sends only the changes, field errors inline", async () => {
    let answer: unknown = { kind: "error", message: "Conv2d: bad", fields: { out_channels: "out_channels: must be > 0" } };
    const { el, kernel, model } = setup({ edit: () => answer });
    model.set("selected", "conv1");
    byRole(el, "tab", "Form")[0].click();
    await flush();
    const labels = [...el.querySelectorAll("label")].map((l) => l.textContent);
    expect(labels).toEqual(expect.arrayContaining(["in_channels", "out_channels", "bias", "padding_mode"]));
    const out = el.querySelector(`#${el.querySelector("label[for]:nth-of-type(1)") ? [...el.querySelectorAll("label")].find((l) => l.textContent === "out_channels")!.htmlFor : ""}`) as HTMLInputElement;
    expect(out.value).toBe("8");
    // Only an unrecoverable value is flagged as a guess; a derived one gets a neutral badge.
    expect(el.querySelector(".tx-derived")?.textContent).toBe("derived");
    const guesses = [...el.querySelectorAll(".tx-guess")];
    expect(guesses).toHaveLength(1);
    expect(guesses[0].closest(".tx-field")?.querySelector("label")?.textContent).toBe("device");
    out.value = "-1";
    button(el, "Apply").click();
    await flush();
    expect(kernel.calls.filter((c) => c.kind !== "health").at(-1)).toEqual({ kind: "edit", path: "conv1", changes: { out_channels: "-1" }, rev: 1 });
    expect(el.textContent).toContain("out_channels: must be > 0");
    expect(el.getAttribute("aria-busy")).not.toBe("true");
    expect(el.querySelector(".tx-root")?.getAttribute("aria-busy")).toBe("false");
    answer = { kind: "patched", id: 1, rev: 2 };
    out.value = "16";
    button(el, "Apply").click();
    await flush();
    expect(kernel.calls.filter((c) => c.kind === "form").length).toBeGreaterThanOrEqual(2); // reloaded
    expect(button(el, "Replace with...")).toBeTruthy();
  });

  it("Replace with... searches the catalog and submits the chosen class", async () => {
    const { el, kernel, model } = setup({
      catalog: (m) => ({ kind: "catalog", entries: [{ name: "InstanceNorm2d", qualname: "torch.nn.InstanceNorm2d", group: "torch", doc: `q=${m.query}` }] }),
      replace: () => ({ kind: "patched", id: 1, rev: 2 }),
    });
    model.set("selected", "conv1");
    byRole(el, "tab", "Form")[0].click();
    await flush();
    button(el, "Replace with...").click();
    await flush();
    expect(kernel.calls.filter((c) => c.kind !== "health").at(-1)).toMatchObject({ kind: "catalog", path: "conv1" });
    button(el, "InstanceNorm2d").click();
    await flush();
    expect(kernel.calls.filter((c) => c.kind !== "health").at(-1)).toMatchObject({ kind: "form", cls: "torch.nn.InstanceNorm2d", prefill: "conv1" });
    button(el, "Replace").click();
    await flush();
    expect(kernel.calls.find((c) => c.kind === "replace")).toMatchObject({
      path: "conv1",
      cls: "torch.nn.modules.conv.Conv2d",
      changes: { in_channels: "3", out_channels: "8", bias: "True", padding_mode: "zeros" },
    });
  });

  it("History: Undo / Redo / Copy code; an error never leaves it busy", async () => {
    const { el, kernel, model } = setup({ undo: () => ({ kind: "error", message: "nothing to undo" }) });
    model.set("history", { entries: [{ id: 1, op: "edit", paths: ["conv1"], old_cls: "Conv2d", new_cls: "Conv2d", changes: { out_channels: "8 → 16" }, code: "" }], can_undo: true, can_redo: false, code: "model.conv1 = ..." });
    byRole(el, "tab", "History")[0].click();
    await flush();
    expect(button(el, "Redo").disabled).toBe(true);
    button(el, "Undo").click();
    await flush();
    expect(kernel.calls.filter((c) => c.kind !== "health").at(-1)).toEqual({ kind: "undo" });
    expect(byRole(el, "alert").map((a) => a.textContent).join("")).toContain("nothing to undo");
    expect(el.querySelector(".tx-root")?.getAttribute("aria-busy")).toBe("false");
    const write = vi.fn(async () => undefined);
    Object.defineProperty(navigator, "clipboard", { value: { writeText: write }, configurable: true });
    button(el, "Copy code").click();
    await flush();
    expect(write).toHaveBeenCalledWith("model.conv1 = ...");
    expect(el.textContent).toContain("copied");
  });

  it("Source tab inserts the kernel's highlighted markup", async () => {
    const { el } = setup();
    byRole(el, "tab", "Source")[0].click();
    await flush();
    expect(el.querySelector(".tx-source .hll")?.textContent).toBe("x = 1");
    expect(el.textContent).toContain("conv.py:10");
    expect(el.textContent).toContain("forward: lines 20–30");
  });

  it("Probe tab: banner naming the failed module and the table with changes", async () => {
    const { el, model } = setup({
      probe_table: () => ({
        kind: "probe_table",
        total: 2,
        removed: [],
        rows: [
          { path: "conv1", cls: "Conv2d", calls: 1, inputs: "1×3×8×8", outputs: "1×16×8×8", status: "changed", before: "1×8×8×8 float32", flops: null, time_ms: null, mem_peak: null },
          { path: "bn1", cls: "BatchNorm2d", calls: 1, inputs: "1×16×8×8", outputs: "", status: "failed", before: null, flops: null, time_ms: null, mem_peak: null },
        ],
      }),
    });
    model.set("probe_summary", FAILED);
    byRole(el, "tab", "Probe")[0].click();
    await flush();
    expect(el.querySelector(".tx-banner")?.textContent).toContain("Probe failed at bn1");
    expect(el.querySelector("tr.tx-changed")?.textContent).toContain("1×8×8×8 float32");
    expect(el.querySelector("tr.tx-failed")).not.toBeNull();
  });

  it("Probe tab: a FLOPs column when rows have FLOPs (fake mode), time and memory when measured (real mode)", async () => {
    const base = { cls: "Linear", calls: 1, inputs: "2×4", outputs: "2×8", status: "same", before: null, mem_peak: null };
    let rows: Array<typeof base & { path: string; flops: number | null; time_ms: number | null }> = [
      { ...base, path: "fc", flops: 128, time_ms: null },
    ];
    const { el, model } = setup({ probe_table: () => ({ kind: "probe_table", total: 1, removed: [], rows }) });
    const heads = () => Array.from(el.querySelectorAll(".tx-table th")).map((x) => x.textContent);
    model.set("probe_summary", { ...FAILED, ok: true, error: null, rev: 7 });
    byRole(el, "tab", "Probe")[0].click();
    await flush();
    expect(heads()).toContain("FLOPs");
    expect(heads()).not.toContain("time");
    expect(heads()).not.toContain("calls"); // every module ran once: the column would say nothing
    expect(el.querySelector(".tx-table tbody tr")?.textContent).toContain("128");
    rows = [{ ...base, path: "fc", flops: null, time_ms: 0.25 }];
    model.set("probe_summary", { ...FAILED, ok: true, error: null, rev: 8 });
    byRole(el, "tab", "Overview")[0].click();
    byRole(el, "tab", "Probe")[0].click();
    await flush();
    expect(heads()).toEqual(expect.arrayContaining(["time", "peak mem"]));
    expect(heads()).not.toContain("FLOPs");
    expect(el.querySelector(".tx-table tbody tr")?.textContent).toContain("0.250 ms");
    rows = [{ ...base, path: "fc", calls: 3, flops: null, time_ms: null }];
    model.set("probe_summary", { ...FAILED, ok: true, error: null, rev: 9 });
    byRole(el, "tab", "Overview")[0].click();
    byRole(el, "tab", "Probe")[0].click();
    await flush();
    expect(heads()).toEqual(["module", "class", "calls", "input", "output"]);
  });

  it("Probe tab: after a failed probe, modules not reached are not called removed (and stay on Show more)", async () => {
    let calls = 0;
    const row = (path: string) => ({ path, cls: "Conv2d", calls: 1, inputs: "1", outputs: "1", status: "same", before: null, flops: null, time_ms: null, mem_peak: null });
    const { el, model } = setup({
      probe_table: (m) => {
        calls += 1;
        return { kind: "probe_table", total: 2, removed: [], not_reached: ["fc"], rows: [row(m.offset === 0 ? "conv1" : "bn1")] };
      },
    });
    model.set("probe_summary", FAILED);
    byRole(el, "tab", "Probe")[0].click();
    await flush();
    const note = () => el.querySelector(".tx-removed summary")?.textContent ?? "";
    const chips = () => [...el.querySelectorAll(".tx-removed .tx-chip")].map((b) => b.textContent);
    expect(note()).toBe("not reached: 1 module (the probe stopped at bn1)");
    expect(chips()).toEqual(["fc"]);
    expect(el.textContent).not.toContain("removed since");
    button(el, "Show more (1 left)").click();
    await flush();
    expect(calls).toBe(2);
    expect(note()).toBe("not reached: 1 module (the probe stopped at bn1)");
    expect(el.querySelectorAll(".tx-table tbody tr").length).toBe(2);
  });

  it("Source tab scrolls its own panel (not the page) to the marked forward; a new tab starts at the top", async () => {
    const { el } = setup();
    const panels = el.querySelector(".tx-panels") as HTMLElement;
    panels.getBoundingClientRect = () => ({ top: 100 }) as DOMRect;
    const rect = vi.spyOn(HTMLElement.prototype, "getBoundingClientRect");
    rect.mockImplementation(function (this: HTMLElement) {
      if (this.classList.contains("tx-srctop")) return { top: 0, height: 40 } as DOMRect;
      return { top: this === panels ? 100 : this.classList.contains("hll") ? 900 : 0, height: 18 } as DOMRect;
    });
    byRole(el, "tab", "Source")[0].click();
    await flush();
    rect.mockRestore();
    // The first forward line lands under the sticky header (40 px), two lines (18 px) below it.
    expect(panels.scrollTop).toBe(900 - 100 - 40 - 2 * 18);
    byRole(el, "tab", "Overview")[0].click();
    await flush();
    expect(panels.scrollTop).toBe(0);
  });

  it("Source tab says when forward lies outside the shown class body", async () => {
    const { el } = setup({
      source: () => ({ kind: "source", html: "<pre>class Module: ...</pre>", file: "module.py", line: 407, reason: null, qualname: "torch.nn.Module", forward_lines: [391, 404] }),
    });
    byRole(el, "tab", "Source")[0].click();
    await flush();
    expect(el.textContent).toContain("forward: lines 391–404 (outside the class body)");
    expect(el.textContent).not.toContain("(marked)");
  });

  it("MRO tab lists the classes even when the renderer cannot load", async () => {
    const { el } = setup({
      mro: () => ({ kind: "mro", dot: "digraph {}", classes: [{ name: "Conv2d", qualname: "torch.nn.Conv2d", module: "torch", group: "torch", defines: ["forward"], node: "c0" }] }),
      asset: () => ({ kind: "error", message: "viz.js is missing: run make js" }),
    });
    byRole(el, "tab", "MRO")[0].click();
    await flush(10);
    expect(button(el, "Conv2d")).toBeTruthy();
    expect(el.textContent).toContain("graph unavailable: viz.js is missing");
  });

  it("detaches its listeners when disposed", async () => {
    const { ex, model } = setup();
    expect(model.listeners("change:probe_summary")).toBe(1);
    ex.dispose();
    expect(model.listeners("change:probe_summary")).toBe(0);
  });
});

describe("saved widget state without a kernel", () => {
  it("falls back to the snapshot when the kernel does not answer", async () => {
    const model = new FakeModel({
      tree_state: firstState(NET) as never,
      selected: "",
      overview: {},
      probe_summary: OK as never,
      history: { entries: [], can_undo: true, can_redo: false, code: "" },
      busy: "",
      error: "",
      probe_mode: "fake",
      readonly: false,
      snapshot: { nodes: [{ path: "", name: "", cls: "Net", nkids: 2, params: 240, depth: 0 }] },
    });
    const el = document.createElement("div");
    const dead = async () => {
      throw new DOMException("signal timed out", "TimeoutError");
    };
    createExplorer({ model: model as never, el, experimental: { invoke: dead as never } });
    await flush();
    expect(el.textContent).toContain("read-only snapshot");
    (byRole(el, "tab", "History")[0] as HTMLElement).click();
    await flush();
    expect(button(el, "Undo").disabled).toBe(true);
  });
});
