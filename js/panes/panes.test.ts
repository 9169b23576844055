// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { FakeModel, fakeKernel, flush, firstState, type FakeNode } from "../fake_model";
import { Rpc } from "../protocol";
import { mountSnapshot } from "../widget";
import type { Ctx } from "./context";
import { FormPane } from "./form";
import { MroPane } from "./mro";
import { OverviewPane } from "./overview";

const NET: FakeNode = { name: "", cls: "Net", kids: [{ name: "fc", cls: "Linear", params: 3 }] };

function ctx(extra: Record<string, (m: Record<string, any>) => unknown>, state: Record<string, unknown> = {}): Ctx {
  const model = new FakeModel({ selected: "fc", tree_state: firstState(NET) as never, ...state });
  const kernel = fakeKernel(NET, extra);
  return {
    rpc: new Rpc(kernel.invoke as never),
    model: model as never,
    readonly: false,
    run: async (_label, fn) => fn(),
    error: () => undefined,
    select: () => undefined,
  };
}

describe("MroPane", () => {
  it("draws the graph with the loaded renderer and shows a clicked class's source", async () => {
    const c = ctx({
      mro: () => ({
        kind: "mro",
        dot: "digraph { c0 -> c1 }",
        classes: [
          { name: "Linear", qualname: "torch.nn.Linear", module: "torch.nn", group: "torch", defines: ["forward"], node: "c0" },
          { name: "Module", qualname: "torch.nn.Module", module: "torch.nn", group: "torch", defines: [], node: "c1" },
        ],
      }),
      source: (m) => ({ kind: "source", html: null, file: null, line: null, reason: `asked for ${m.cls}`, qualname: m.cls, forward_lines: null }),
    });
    let rendered = "";
    const svgNs = "http://www.w3.org/2000/svg";
    const loader = async () => (dot: string) => {
      rendered = dot;
      const svg = document.createElementNS(svgNs, "svg");
      for (const id of ["c0", "c1"]) {
        const g = document.createElementNS(svgNs, "g");
        g.setAttribute("class", "node");
        const t = document.createElementNS(svgNs, "title");
        t.textContent = id;
        g.appendChild(t);
        svg.appendChild(g);
      }
      return svg;
    };
    const pane = new MroPane(c, loader);
    await pane.show();
    expect(rendered).toBe("digraph { c0 -> c1 }");
    const node = pane.el.querySelectorAll("g.node")[1] as SVGGElement;
    expect(node.getAttribute("aria-label")).toBe("source of Module");
    node.dispatchEvent(new Event("click"));
    await flush();
    expect(pane.el.textContent).toContain("No source: asked for torch.nn.Module");
  });
});

describe("OverviewPane", () => {
  it("lists sizes, hooks and the probe record", () => {
    const c = ctx({}, {
      overview: {
        path: "fc", name: "fc", cls: "Linear", qualname: "torch.nn.Linear", params_total: 1234567, params_own: 1234567,
        trainable_total: 10, bytes_total: 2048, devices: ["cpu"], dtypes: ["float32"], training: false,
        hooks: [{ kind: "forward", name: "log" }], extra_repr: "in_features=2",
        probe: { calls: 2, inputs: "1×2 float32", outputs: "1×3 float32", flops: 12, time_ms: 0.5, mem_peak: null },
      },
    });
    const pane = new OverviewPane(c);
    pane.show();
    const text = pane.el.textContent ?? "";
    for (const s of ["1.2M", "2.0 KiB", "eval", "forward: log", "1×3 float32", "0.500 ms", "in_features=2"]) {
      expect(text).toContain(s);
    }
  });
});

describe("mountSnapshot", () => {
  it("renders a read-only explorer with actions disabled", async () => {
    const el = document.createElement("div");
    document.body.appendChild(el);
    mountSnapshot(el, {
      tree_state: firstState(NET) as never,
      selected: "",
      overview: { path: "", name: "", cls: "Net", qualname: "m.Net" },
      probe_summary: { ok: true, mode: "fake", status: "probe ok: 2 modules", count: 2, error: null, changed: 0, rev: 1, stale: false },
      history: { entries: [], can_undo: true, can_redo: true, code: "" },
      busy: "",
      error: "",
      probe_mode: "fake",
      readonly: false,
      snapshot: {},
    });
    await flush();
    expect(el.textContent).toContain("read-only snapshot");
    expect(el.querySelector('[role="status"]')?.textContent).toBe("probe ok: 2 modules");
    (el.querySelectorAll('[role="tab"]')[6] as HTMLElement).click(); // History
    await flush();
    const undo = [...el.querySelectorAll("button")].find((b) => b.textContent === "Undo") as HTMLButtonElement;
    expect(undo.disabled).toBe(true);
  });
});

describe("form fields", () => {
  it("uses a select for optional bools and suggestions for open fields", async () => {
    const { renderFields } = await import("./form");
    const form = document.createElement("form");
    const base = { default: null, required: false, origin: "attribute", annotation: "", optional: false, group: "", read: null, note: "" };
    const read = renderFields(
      form,
      [
        { ...base, name: "align_corners", kind: "bool", text: "None", choices: [], optional: true },
        { ...base, name: "padding", kind: "int_or_tuple", text: "(0, 0)", choices: ["same", "valid"] },
        { ...base, name: "dtype", kind: "dtype", text: "torch.float32", choices: [] },
      ],
      new Map(),
    );
    const select = form.querySelector("select") as HTMLSelectElement;
    expect([...select.options].map((o) => o.value)).toEqual(["True", "False", "None"]);
    expect(select.value).toBe("None");
    const padding = form.querySelector('input[data-kind="int_or_tuple"]') as HTMLInputElement;
    const list = form.querySelector(`#${padding.getAttribute("list")}`);
    expect([...(list?.querySelectorAll("option") ?? [])].map((o) => o.getAttribute("value"))).toEqual(["same", "valid"]);
    expect(form.querySelector('input[data-kind="dtype"]')?.getAttribute("list")).toBeTruthy();
    select.value = "True";
    padding.value = "same";
    expect(read(false)).toEqual({ align_corners: "True", padding: "same" });
  });

  it("groups a config's fields, read ones open, the others folded", async () => {
    const { renderFields } = await import("./form");
    const form = document.createElement("form");
    const base = { default: null, required: false, origin: "attribute", annotation: "", optional: false, note: "", choices: [] };
    const read = renderFields(
      form,
      [
        { ...base, name: "config", kind: "config", text: "<LlamaConfig>", group: "", read: null },
        { ...base, name: "config.num_attention_heads", kind: "int", text: "4", group: "config", read: true },
        { ...base, name: "config.vocab_size", kind: "int", text: "128", group: "config", read: false },
        { ...base, name: "layer_idx", kind: "int", text: "0", group: "", read: null, origin: "inferred", note: "why" },
      ],
      new Map(),
    );
    const group = form.querySelector("details.tx-group") as HTMLDetailsElement;
    expect(group.open).toBe(true);
    expect(group.querySelector("summary")?.textContent).toContain("config");
    const heads = group.querySelector('input[data-kind="int"]') as HTMLInputElement;
    expect(heads.value).toBe("4");
    const folded = group.querySelector("details.tx-group") as HTMLDetailsElement;
    expect(folded.open).toBe(false);
    expect((folded.querySelector("input") as HTMLInputElement).value).toBe("128");
    expect(form.textContent).toContain("inferred");
    heads.value = "8";
    expect(read(false)).toEqual({ "config.num_attention_heads": "8" });
    expect(Object.keys(read(true))).not.toContain("config");
  });
});

describe("FormPane", () => {
  it("keeps what was typed when a probe's results arrive, and rebuilds after a model change", async () => {
    let asked = 0;
    const field = {
      name: "out_features", kind: "int", text: "3", default: null, required: true, origin: "attribute",
      annotation: "int", optional: false, group: "", read: null, note: "", choices: [],
    };
    const c = ctx({
      form: () => {
        asked += 1;
        return { kind: "form", path: "fc", cls: "Linear", qualname: "torch.nn.Linear", fields: [field], rev: 1, aliases: [], hint: "", inexact: "", refusal: "" };
      },
    }, { tree_state: { ...firstState(NET, 1), model_rev: 1 } });
    const pane = new FormPane(c);
    // The kernel's next tree state (rev, model_rev), then what the form shows: (asked, value).
    const after = async (rev: number, modelRev: number): Promise<[number, string]> => {
      (c.model as unknown as FakeModel).set("tree_state", { ...firstState(NET, rev), model_rev: modelRev });
      await pane.show();
      await flush();
      return [asked, (pane.el.querySelector("input") as HTMLInputElement).value];
    };
    expect(await after(1, 1)).toEqual([1, "3"]);
    (pane.el.querySelector("input") as HTMLInputElement).value = "7";
    // A probe alone bumps rev and leaves the model as it was: the form stays, value and all.
    expect(await after(2, 1)).toEqual([1, "7"]);
    // An edit elsewhere changes the model: the form is asked for again, and what was typed
    // stays where the field still shows the value it was typed over.
    expect(await after(3, 3)).toEqual([2, "7"]);
    // The field's live value changed under it: the new value is shown, not the draft.
    field.text = "5";
    expect(await after(4, 4)).toEqual([3, "5"]);
  });
});
