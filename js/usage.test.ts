// @vitest-environment happy-dom
// The widget as a person uses it: keys stay inside it, Undo/Redo are in the header and next to a failure,
// drafts belong to one module, and a Probe row leads to the tree.
import { beforeEach, describe, expect, it } from "vitest";
import { FakeModel, fakeKernel, firstState, flush, type FakeNode } from "./fake_model";
import { createExplorer } from "./widget";

const NET: FakeNode = { name: "", cls: "Net", kids: [{ name: "conv1", cls: "Conv2d", params: 224 }, { name: "bn1", cls: "BatchNorm2d", params: 16 }] };
const OK = { ok: true, mode: "fake", status: "probe ok: 3 modules", count: 3, error: null, changed: 0, rev: 1 };
const FAILED = { ...OK, ok: false, status: "probe failed at bn1", error: { path: "bn1", cls: "BatchNorm2d", exc_type: "RuntimeError", message: "m", hint: "", input_shapes: "" }, rev: 2 };
const field = (name: string, text: string) => ({ name, kind: "int", text, default: null, required: true, choices: [], origin: "attribute", annotation: "int", optional: false });

function setup() {
  const model = new FakeModel({
    tree_state: firstState(NET) as never, selected: "conv1", overview: {}, probe_summary: OK as never,
    history: { entries: [], can_undo: true, can_redo: false, code: "" },
    busy: "", error: "", probe_mode: "fake", readonly: false, snapshot: {},
  });
  const kernel = fakeKernel(NET, {
    form: (m) => ({ kind: "form", path: m.path, cls: "Conv2d", qualname: "Conv2d", rev: 1, aliases: [], fields: [field("out_channels", "8")] }),
    undo: () => ({ kind: "undo" }),
    redo: () => ({ kind: "redo" }),
    probe_table: () => ({ kind: "probe_table", total: 1, removed: [], rows: [{ path: "bn1", cls: "BatchNorm2d", calls: 1, inputs: "1", outputs: "1", status: "same", before: null, flops: null, time_ms: null, mem_peak: null }] }),
  });
  const el = document.createElement("div");
  document.body.appendChild(el);
  createExplorer({ model: model as never, el, experimental: { invoke: kernel.invoke as never } });
  return { model, kernel, el };
}

const button = (el: HTMLElement, name: string) => [...el.querySelectorAll("button")].find((b) => b.textContent === name) as HTMLButtonElement;
const tab = (el: HTMLElement, name: string) => [...el.querySelectorAll('[role="tab"]')].find((t) => t.textContent === name) as HTMLElement;
const key = (target: Element, k: string, mods: KeyboardEventInit = {}) =>
  target.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true, cancelable: true, ...mods }));

describe("keys typed in the widget", () => {
  beforeEach(() => {
    document.body.innerHTML = "";
  });

  it("keeps letters and Ctrl+X from the notebook, lets Escape, Shift+Enter and Ctrl+S through", () => {
    const { el } = setup();
    const seen: string[] = [];
    const listen = (e: KeyboardEvent) => seen.push(e.key);
    document.addEventListener("keydown", listen);
    const tree = el.querySelector('[role="tree"]') as HTMLElement;
    for (const k of ["b", "m", "d", "d", "z"]) key(tree, k);
    key(tree, "x", { ctrlKey: true }); // JupyterLab: cut the cell
    key(tree, "Escape");
    key(tree, "Enter", { shiftKey: true });
    key(tree, "s", { ctrlKey: true });
    document.removeEventListener("keydown", listen);
    expect(seen).toEqual(["Escape", "Enter", "s"]);
  });

  it("Ctrl+Z / Ctrl+Shift+Z undo and redo, but not while editing text", async () => {
    const { el, kernel, model } = setup();
    const tree = el.querySelector('[role="tree"]') as HTMLElement;
    key(tree, "z", { ctrlKey: true });
    await flush();
    expect(kernel.calls.at(-1)).toEqual({ kind: "undo" });
    model.set("history", { entries: [], can_undo: false, can_redo: true, code: "" });
    key(tree, "Z", { ctrlKey: true, shiftKey: true });
    await flush();
    expect(kernel.calls.at(-1)).toEqual({ kind: "redo" });
    const n = kernel.calls.length;
    key(el.querySelector('input[type="search"]') as HTMLElement, "z", { ctrlKey: true });
    await flush();
    expect(kernel.calls.length).toBe(n);
  });
});

describe("Undo at hand", () => {
  beforeEach(() => {
    document.body.innerHTML = "";
  });

  it("in the header, and next to a failure status", async () => {
    const { el, kernel, model } = setup();
    expect(button(el, "Undo").disabled).toBe(false);
    expect(button(el, "Redo").disabled).toBe(true);
    expect(button(el, "Undo last patch").hidden).toBe(true);
    model.set("probe_summary", FAILED);
    expect(button(el, "Undo last patch").hidden).toBe(false);
    button(el, "Undo last patch").click();
    await flush();
    expect(kernel.calls.at(-1)).toEqual({ kind: "undo" });
  });
});

describe("drafts and the probe table", () => {
  beforeEach(() => {
    document.body.innerHTML = "";
  });

  it("a draft goes when the selection changes while the Form is hidden; Reset restores", async () => {
    const { el, model } = setup();
    tab(el, "Form").click();
    await flush();
    const input = () => el.querySelector('input[type="text"]') as HTMLInputElement;
    input().value = "-4";
    tab(el, "Overview").click();
    model.set("selected", "bn1");
    model.set("selected", "conv1");
    tab(el, "Form").click();
    await flush();
    expect(input().value).toBe("8");
    input().value = "99";
    button(el, "Reset").click();
    await flush();
    expect(input().value).toBe("8");
  });

  it("a click on a Probe row selects its module", async () => {
    const { el, kernel } = setup();
    tab(el, "Probe").click();
    await flush();
    (el.querySelector(".tx-table tbody tr") as HTMLElement).click();
    await flush();
    expect(kernel.calls).toContainEqual({ kind: "select", path: "bn1" });
  });
});
