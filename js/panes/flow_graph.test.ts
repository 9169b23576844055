// @vitest-environment happy-dom
// Execution flow in the panes: call sites in the Overview and the Source tab that marks
// the caller's line, the Probe tab's call tree, and the Graph tab's nodes.
import { describe, expect, it } from "vitest";
import { FakeModel, fakeKernel, flush, firstState, type FakeNode } from "../fake_model";
import { Rpc } from "../protocol";
import type { Ctx } from "./context";
import { GraphPane } from "./graph";
import { OverviewPane } from "./overview";
import { ProbePane } from "./probe";
import { SourcePane } from "./source";

const NET: FakeNode = { name: "", cls: "Net", kids: [{ name: "fc", cls: "Linear", params: 3 }] };
const PROBE = { ok: true, mode: "fake", status: "probe ok", count: 2, error: null, changed: 0, rev: 3 };

function setup(extra: Record<string, (m: Record<string, any>) => unknown>, state: Record<string, unknown> = {}) {
  const model = new FakeModel({ selected: "fc", tree_state: firstState(NET) as never, probe_summary: PROBE as never, ...state });
  const kernel = fakeKernel(NET, extra);
  const selected: string[] = [];
  const opened: unknown[][] = [];
  const c: Ctx = {
    rpc: new Rpc(kernel.invoke as never),
    model: model as never,
    readonly: false,
    run: async (_label, fn) => fn(),
    error: () => undefined,
    select: (path) => {
      selected.push(path);
      model.set("selected", path);
    },
    openSource: (...args) => opened.push(args),
  };
  return { c, model, kernel, selected, opened };
}

const SITE = { function: "Net.forward", file: "/m.py", line: 12, text: "x = self.fc(x)", count: 1, reason: "", caller: "", cls: "m.Net" };

describe("OverviewPane call sites", () => {
  it("lists each site, its count, and links the line to the caller's source", () => {
    const { c, opened } = setup({}, {
      overview: {
        path: "fc", name: "fc", cls: "Linear", qualname: "torch.nn.Linear", params_total: 3, params_own: 3, trainable_total: 3, bytes_total: 12,
        sites: [SITE, { ...SITE, line: 14, text: "y = self.fc(<b>y</b>)", count: 3 }, { ...SITE, line: 0, function: "", reason: "called from C++ code", caller: null, cls: null }],
      },
    });
    const pane = new OverviewPane(c);
    pane.show();
    const rows = [...pane.el.querySelectorAll(".tx-site")].map((x) => x.textContent);
    expect(rows).toEqual([
      "Net.forward, line 12: x = self.fc(x)",
      "Net.forward, line 14: y = self.fc(<b>y</b>) (3 calls)",
      "?: called from C++ code",
    ]);
    expect(pane.el.querySelector(".tx-site b")).toBeNull(); // model text is text, never markup
    (pane.el.querySelector(".tx-site button") as HTMLButtonElement).click();
    expect(opened).toEqual([["", "m.Net", 12]]);
  });
});

describe("SourcePane at a call site", () => {
  it("asks for the caller's class with the line and marks it, until the selection changes", async () => {
    const { c, kernel } = setup({
      source: (m) => ({ kind: "source", html: `<pre><span class="hll">${m.line ?? "fwd"}</span></pre>`, file: "/m.py", line: 1, reason: null, qualname: m.cls ?? "Linear", forward_lines: null, note: null }),
    });
    const pane = new SourcePane(c);
    pane.at({ path: "", cls: "m.Net", line: 12 });
    await pane.show();
    expect(kernel.calls.at(-1)).toEqual({ kind: "source", path: "", cls: "m.Net", line: 12 });
    expect(pane.el.querySelector(".tx-source.tx-callsite .hll")?.textContent).toBe("12");
    pane.selectionChanged();
    await pane.show();
    expect(kernel.calls.at(-1)).toEqual({ kind: "source", path: "fc" });
    expect(pane.el.querySelector(".tx-callsite")).toBeNull();
  });
});

const LINES = [
  { pos: 0, path: "", cls: "Net", index: 0, calls: 1, depth: 0, count: 0, key: "", last: "", open: false },
  { pos: 1, path: "shared", cls: "Linear", index: 1, calls: 3, depth: 1, count: 0, key: "", last: "", open: false },
  { pos: 2, path: "blocks.0", cls: "Block", index: 0, calls: 1, depth: 1, count: 4, key: "2", last: "blocks.3", open: false },
];

describe("ProbePane call tree", () => {
  it("switches to the call tree: indented calls, #index when repeated, folds that open, a click selects", async () => {
    const asked: Record<string, any>[] = [];
    const { c, selected } = setup({
      probe_table: () => ({ kind: "probe_table", rows: [], total: 0, removed: [], not_reached: [], offset: 0 }),
      flow: (m) => {
        asked.push(m);
        return { kind: "flow", lines: LINES, offset: 0, total: 3, calls: 9, note: "" };
      },
    });
    const pane = new ProbePane(c);
    await pane.show();
    const toggle = [...pane.el.querySelectorAll("button")].find((b) => b.textContent === "Call tree") as HTMLButtonElement;
    toggle.click();
    await flush();
    const rows = [...pane.el.querySelectorAll(".tx-flowline")] as HTMLElement[];
    expect(rows.map((r) => r.textContent)).toEqual(["(model) Net", "shared #1 Linear", "▸×4 Block 0–3"]);
    expect(rows[1].style.paddingLeft).toBe("14px");
    expect(rows[2].getAttribute("aria-expanded")).toBe("false");
    rows[1].click();
    expect(selected).toEqual(["shared"]);
    rows[2].click();
    await flush();
    expect(asked.at(-1)).toMatchObject({ kind: "flow", offset: 0, open: ["2"] });
  });
});

describe("GraphPane", () => {
  const svgNs = "http://www.w3.org/2000/svg";
  const loader = async () => (dot: string) => {
    const svg = document.createElementNS(svgNs, "svg");
    for (const id of dot.match(/\b[ng]\d+\b/g) ?? []) {
      if (svg.querySelector(`#x${id}`)) continue;
      const g = document.createElementNS(svgNs, "g");
      g.setAttribute("class", "node");
      g.setAttribute("id", `x${id}`);
      const t = document.createElementNS(svgNs, "title");
      t.textContent = id;
      g.appendChild(t);
      svg.appendChild(g);
    }
    return svg;
  };
  const NODES = [
    { id: "n0", path: "fc", kind: "module", key: "", count: 1, nkids: 2 },
    { id: "g1", path: "blocks.0", kind: "group", key: "blocks.0", count: 4, nkids: 3 },
  ];

  it("draws the selected module's children; a click selects (the graph stays), a group expands, Go into descends", async () => {
    const asked: Record<string, any>[] = [];
    const { c, selected, model } = setup(
      { graph: (m) => (asked.push(m), { kind: "graph", path: m.path, dot: "digraph { n0 -> g1 }", nodes: NODES, edges: 1, note: "" }) },
      { selected: "" },
    );
    const pane = new GraphPane(c, loader);
    await pane.show();
    expect(asked.at(-1)).toEqual({ kind: "graph", path: "", open: [], depth: 1 });
    const node = pane.el.querySelector("#xn0") as SVGGElement;
    expect(node.getAttribute("aria-label")).toBe("select fc");
    node.dispatchEvent(new Event("click"));
    await pane.show(); // the widget refreshes the pane on the new selection
    expect(selected).toEqual(["fc"]);
    expect(asked).toHaveLength(1); // same graph, the clicked node outlined
    expect(pane.el.querySelector("#xn0")?.classList.contains("tx-current")).toBe(true);
    const group = pane.el.querySelector("#xg1") as SVGGElement;
    group.dispatchEvent(new Event("click"));
    await flush();
    expect(asked.at(-1)).toEqual({ kind: "graph", path: "", open: ["blocks.0"], depth: 1 });
    const go = [...pane.el.querySelectorAll("button")].find((b) => b.textContent === "Go into fc") as HTMLButtonElement;
    go.click();
    await flush();
    expect(asked.at(-1)).toEqual({ kind: "graph", path: "fc", open: [], depth: 1 });
    expect(model.get("selected")).toBe("fc");
    expect(pane.el.textContent).toContain("Dataflow inside fc");
  });

  it("draws the whole model from its root, whatever is selected; Go into draws one level again", async () => {
    const asked: Record<string, any>[] = [];
    const { c, model } = setup(
      { graph: (m) => (asked.push(m), { kind: "graph", path: m.path, dot: "digraph { n0 -> g1 }", nodes: NODES, edges: 1, note: "", depth: m.depth }) },
      { selected: "blocks.1.1" },
    );
    const pane = new GraphPane(c, loader);
    await pane.show();
    expect(asked.at(-1)).toEqual({ kind: "graph", path: "blocks.1.1", open: [], depth: 1 });
    const depth = pane.el.querySelector("select[aria-label='graph depth']") as HTMLSelectElement;
    depth.value = "0";
    depth.dispatchEvent(new Event("change"));
    await flush();
    expect(asked.at(-1)).toEqual({ kind: "graph", path: "", open: [], depth: 0 });
    expect(pane.el.textContent).toContain("Dataflow of the whole model · blocks.1.1 outlined");
    expect([...pane.el.querySelectorAll("button")].some((b) => b.textContent === "Up")).toBe(false);
    model.set("selected", "fc"); // a row clicked in the tree: the same whole graph, fc outlined
    await pane.show();
    expect(asked).toHaveLength(2);
    expect(pane.el.textContent).toContain("fc outlined");
    (pane.el.querySelector("#xn0") as SVGGElement).dispatchEvent(new Event("dblclick"));
    await flush();
    expect(asked.at(-1)).toEqual({ kind: "graph", path: "fc", open: [], depth: 1 });
    expect(depth.value).toBe("1");
  });

  it("says why there is no dataflow", async () => {
    const { c } = setup({ graph: () => ({ kind: "graph", path: "fc", dot: "digraph {}", nodes: [], edges: 0, note: "a real probe records no dataflow" }) });
    const pane = new GraphPane(c, loader);
    await pane.show();
    expect(pane.el.textContent).toContain("a real probe records no dataflow");
  });

  it("says in one line why a leaf has no graph, with no frame and no zoom or export buttons", async () => {
    const note = "fc has no child modules, so there is no dataflow inside it to draw: its inputs and outputs are in the Overview";
    const leaf = { graph: () => ({ kind: "graph", path: "fc", dot: "", nodes: [], edges: 0, note, depth: 1 }) };
    const buttons = (pane: GraphPane) =>
      [...pane.el.querySelectorAll("button, select")].filter((b) => !b.closest("[hidden]")).map((b) => b.getAttribute("aria-label") ?? b.textContent?.trim());
    const live = new GraphPane(setup(leaf).c, loader);
    await live.show();
    expect(live.el.querySelector(".tx-muted")?.textContent).toBe(note);
    expect(live.view.el.hidden).toBe(true);
    // With a kernel: "Up" draws the parent, the depth picker can still draw the whole model.
    expect(buttons(live)).toEqual(["graph depth", "Up"]);
    const { c } = setup(leaf);
    const snap = new GraphPane({ ...c, readonly: true }, loader);
    await snap.show();
    expect(snap.el.textContent).toContain(note);
    expect(buttons(snap)).toEqual(["Up"]); // a snapshot's disabled depth picker is left out
  });

  it("asks for the chosen depth, and shows the graph at 100% with zoom and an SVG export", async () => {
    const asked: Record<string, any>[] = [];
    const { c } = setup({ graph: (m) => (asked.push(m), { kind: "graph", path: m.path, dot: "digraph { n0 -> g1 }", nodes: NODES, edges: 1, note: "", depth: m.depth }) });
    const sized = async (dot: string) => {
      const svg = (await loader())(dot) as SVGSVGElement;
      svg.setAttribute("width", "300pt");
      svg.setAttribute("height", "150pt");
      return svg;
    };
    const viewLoader = async () => {
      const made = await sized("digraph { n0 -> g1 }");
      return () => made;
    };
    const real = new GraphPane(c, viewLoader);
    await real.show();
    const depth = real.el.querySelector("select[aria-label='graph depth']") as HTMLSelectElement;
    expect([...depth.options].map((o) => o.value)).toEqual(["1", "2", "3", "0"]);
    depth.value = "0";
    depth.dispatchEvent(new Event("change"));
    await flush();
    expect(asked.at(-1)).toMatchObject({ kind: "graph", open: [], depth: 0 });
    const svg = real.el.querySelector(".tx-gview-vp svg") as SVGSVGElement;
    expect(svg.style.width).toBe("400px"); // 300 pt at 100%
    const plus = [...real.el.querySelectorAll("button")].find((b) => b.textContent === "+") as HTMLButtonElement;
    plus.click();
    expect(svg.style.width).toBe("500px");
    expect(real.el.querySelector(".tx-gview-level")?.textContent).toBe("125%");
    const text = real.view.svgText();
    expect(text.startsWith("<?xml")).toBe(true);
    expect(text).toContain('xmlns="http://www.w3.org/2000/svg"');
    expect(text).toContain('width="400px"');
  });
});
