// The Graph tab: the dataflow between the selected module's children, from the kernel's DOT
// ("graph" request, src/torchxray/_view/graph_dot.py) laid out by @viz-js/viz, loaded as the MRO
// tab loads it. One level by default; "depth" draws deeper levels as clusters; "the whole model"
// draws the model from its root, every level (Netron's and torchview's view), the selected module
// outlined in it. A click on a node selects its module (the graph stays);
// a double click or "Go into" draws that module's own children; a folded run of blocks expands on
// click. Shapes are on the edges, the functional ops in their tooltips; zoom, pan and the SVG/PNG
// export are graph_view.ts's; the theme's colours come from styles.css.
import { clear, h } from "../dom";
import type { GraphNode, GraphReply } from "../protocol";
import { messageOf, type Ctx, type Pane } from "./context";
import { GraphView } from "./graph_view";
import { loadViz, type RendererLoader } from "./mro";

/** The depths offered: 1 (the children), 2, 3, and the whole model from its root (0). */
export const DEPTHS = [
  ["1", "1 level (children)"],
  ["2", "2 levels"],
  ["3", "3 levels"],
  ["0", "the whole model"],
] as const;

export type { GraphNode };

function parentOf(path: string): string {
  const i = path.lastIndexOf(".");
  return i < 0 ? "" : path.slice(0, i);
}

function nameOf(path: string): string {
  return path ? path.slice(path.lastIndexOf(".") + 1) : "(model)";
}

export class GraphPane implements Pane {
  readonly el = h("div", { class: "tx-graphpane" });
  private readonly bar = h("div", { class: "tx-buttons tx-graphbar" });
  readonly view: GraphView;
  private readonly graph: HTMLElement;
  private readonly depth = h("select", { "aria-label": "graph depth" });
  private readonly note = h("p", { class: "tx-muted" });
  private base: string | null = null; // the module whose children are drawn
  private clicked: string | null = null; // a node clicked here: selecting it keeps the graph
  private readonly open = new Set<string>(); // groups expanded, by key
  private nodes: GraphNode[] = [];
  private shown: string | null = null;
  private seq = 0;
  /** Milliseconds the last layout took in the browser (DOT to SVG), for the bench. */
  layoutMs = 0;

  constructor(
    private readonly ctx: Ctx,
    private readonly loader: RendererLoader = loadViz,
  ) {
    this.view = new GraphView(() => `torchxray-graph-${this.drawn() || "model"}${this.depth.value === "1" ? "" : `-depth${this.depth.value}`}`);
    this.graph = this.view.viewport;
    this.graph.classList.add("tx-graph", "tx-flowgraph");
    for (const [value, label] of DEPTHS) this.depth.appendChild(h("option", { value }, label));
    this.depth.addEventListener("change", () => void this.show());
    this.el.append(this.bar, this.note, this.view.el);
  }

  async show(): Promise<void> {
    const selected = String(this.ctx.model.get("selected") ?? "");
    if (this.base === null || selected !== this.clicked) this.goTo(selected);
    const base = this.drawn();
    const depth = Number(this.depth.value);
    const key = `${base}@${depth}@${this.ctx.model.get("tree_state")?.rev}@${this.ctx.model.get("probe_summary")?.rev}@${[...this.open].join(",")}`;
    if (key === this.shown) {
      if (this.whole()) this.toolbar(); // says which module is outlined
      this.mark();
      return;
    }
    this.shown = key;
    const seq = ++this.seq;
    this.view.clear();
    this.note.textContent = "drawing the dataflow…";
    let r: GraphReply;
    try {
      r = await this.ctx.rpc.call({ kind: "graph", path: base, open: [...this.open], depth });
    } catch (e) {
      if (seq !== this.seq) return;
      this.shown = null;
      this.nothing(messageOf(e));
      return;
    }
    if (seq !== this.seq) return;
    this.nodes = r.nodes;
    if (!r.nodes.length) {
      // A leaf: no children, so no dataflow inside it. The kernel's note says so in one line; an
      // empty frame with zoom and export buttons would suggest a graph that failed to draw.
      this.nothing(r.note || `${base || "the model"} has nothing to draw`);
      return;
    }
    this.view.el.hidden = false;
    const boxes = r.nodes.filter((n) => n.path && n.kind !== "cluster").length;
    this.note.textContent = r.note || `${r.edges} edges between ${boxes} nodes`;
    this.toolbar();
    try {
      const render = await this.loader(this.ctx.rpc);
      if (seq !== this.seq) return;
      const t0 = performance.now();
      const svg = render(r.dot) as SVGSVGElement;
      this.layoutMs = performance.now() - t0;
      this.graph.dataset.layoutMs = this.layoutMs.toFixed(1);
      this.view.show(svg);
      this.wire(svg);
      this.mark();
    } catch (e) {
      if (seq !== this.seq) return;
      this.view.message(h("p", { class: "tx-note" }, `graph unavailable: ${messageOf(e)}`));
    }
  }

  /** No graph to show (a leaf, or one the snapshot does not hold): one line saying why, and of
   * the controls only those that still do something ("Up" to the parent's graph). */
  private nothing(why: string): void {
    this.note.textContent = why;
    this.view.el.hidden = true;
    this.nodes = [];
    this.toolbar(false);
  }

  /** Whether the whole model is drawn (from its root, whatever is selected). */
  private whole(): boolean {
    return this.depth.value === "0";
  }

  /** The module whose dataflow is drawn: the root for the whole model, else the base. */
  private drawn(): string {
    return this.whole() ? "" : (this.base ?? "");
  }

  /** Draws `path`'s children from now on (its groups folded again). */
  private goTo(path: string): void {
    if (path !== this.base) this.open.clear();
    this.base = path;
    this.clicked = null;
  }

  private into(path: string): void {
    if (this.whole()) this.depth.value = "1"; // going into a module draws its children
    this.goTo(path);
    this.ctx.select(path);
    void this.show();
  }

  private toolbar(drawn = true): void {
    clear(this.bar);
    const base = this.drawn();
    const selected = String(this.ctx.model.get("selected") ?? "");
    if (!drawn) this.bar.appendChild(h("span", {}, "No graph for ", h("strong", {}, base || "(model)")));
    else if (this.whole()) {
      const outlined = selected ? [" · ", h("strong", {}, selected), " outlined"] : [];
      this.bar.appendChild(h("span", {}, "Dataflow of ", h("strong", {}, "the whole model"), ...outlined));
    } else this.bar.appendChild(h("span", {}, "Dataflow inside ", h("strong", {}, base || "(model)")));
    // With a kernel, another depth still draws something from a leaf ("the whole model"); a
    // snapshot's picker is disabled, so with nothing drawn it would be a dead control.
    if (drawn || !this.ctx.readonly) this.bar.appendChild(h("label", {}, "show ", this.depth));
    this.depth.disabled = this.ctx.readonly; // a snapshot holds one level of each module
    if (this.ctx.readonly) this.depth.title = "a snapshot holds one level per module: deeper views need the kernel";
    if (base !== "" && !this.whole()) {
      const up = h("button", { type: "button", title: `draw the children of ${parentOf(base) || "the model"}` }, "Up");
      up.addEventListener("click", () => this.into(parentOf(base)));
      this.bar.appendChild(up);
    }
    const target = this.nodes.find((n) => n.kind === "module" && n.path === this.clicked && n.nkids > 0);
    if (target) {
      const go = h("button", { type: "button", title: "draw its children" }, `Go into ${nameOf(target.path)}`);
      go.addEventListener("click", () => this.into(target.path));
      this.bar.appendChild(go);
    }
    for (const key of this.open) {
      const b = h("button", { type: "button", title: "show the run of blocks as one node again" }, `Fold ${nameOf(key)}…`);
      b.addEventListener("click", () => {
        this.open.delete(key);
        void this.show();
      });
      this.bar.appendChild(b);
    }
  }

  private wire(svg: Element): void {
    const byId = new Map(this.nodes.map((n) => [n.id, n]));
    svg.querySelectorAll("g.node, g.cluster").forEach((g) => {
      const n = byId.get(g.querySelector("title")?.textContent ?? "");
      if (!n || !n.path) return;
      const el = g as SVGGElement;
      el.style.cursor = "pointer";
      el.setAttribute("role", "button");
      el.dataset.path = n.path;
      g.classList.add(n.kind === "group" ? "tx-group" : n.kind === "cluster" ? "tx-clusterbox" : "tx-module");
      if (n.kind === "group") {
        el.setAttribute("aria-label", `expand ${n.count} blocks from ${n.path}`);
        g.addEventListener("click", () => {
          this.open.add(n.key);
          void this.show();
        });
        return;
      }
      el.setAttribute("aria-label", `select ${n.path}`);
      g.addEventListener("click", () => {
        this.clicked = n.path;
        this.ctx.select(n.path);
        this.toolbar();
        this.mark();
      });
      if (n.nkids > 0) g.addEventListener("dblclick", () => this.into(n.path));
    });
  }

  /** Outlines the node of the selected module. */
  private mark(): void {
    const selected = String(this.ctx.model.get("selected") ?? "");
    this.graph.querySelectorAll("g.node, g.cluster").forEach((g) => {
      g.classList.toggle("tx-current", (g as SVGGElement).dataset.path === selected);
    });
  }
}
