// The class hierarchy (MRO) of the selected module drawn from the kernel's DOT with @viz-js/viz.
// The renderer (~1.2 MB, WASM inlined) is not in the widget bundle: the kernel sends static/viz.js
// when this tab first opens, and it is imported from a blob: URL (anywidget itself loads our ESM
// from a blob, so a relative chunk import would not resolve). No network request is made.
import { clear, h } from "../dom";
import type { Channel, MroClass, MroReply } from "../protocol";
import { messageOf, modelRev, type Ctx, type Pane } from "./context";
import { GraphView } from "./graph_view";
import { renderSource } from "./source";

export type { MroClass };

export type RenderSvg = (dot: string) => SVGSVGElement | Element;
export type RendererLoader = (rpc: Channel) => Promise<RenderSvg>;

let vizPromise: Promise<RenderSvg> | null = null;

export const loadViz: RendererLoader = (rpc) => {
  if (!vizPromise) {
    vizPromise = (async () => {
      const r = await rpc.call({ kind: "asset", name: "viz" });
      const url = URL.createObjectURL(new Blob([r.code], { type: "text/javascript" }));
      try {
        const mod = await import(/* @vite-ignore */ url);
        const viz = await mod.instance();
        return (dot: string) => viz.renderSVGElement(dot) as SVGSVGElement;
      } finally {
        URL.revokeObjectURL(url);
      }
    })();
    vizPromise.catch(() => {
      vizPromise = null; // let a later open retry
    });
  }
  return vizPromise;
};

export class MroPane implements Pane {
  readonly el = h("div", { class: "tx-mropane" });
  // At 100% and scrolled, zoomed on demand: shrunk to fit, a deep hierarchy's labels were 7 px.
  readonly view: GraphView;
  private readonly list = h("div", { class: "tx-classes" });
  private readonly src = h("div", { class: "tx-mrosrc" });
  private shown: string | null = null;
  private seq = 0;

  constructor(
    private readonly ctx: Ctx,
    private readonly loader: RendererLoader = loadViz,
  ) {
    this.view = new GraphView(() => `torchxray-mro-${String(this.ctx.model.get("selected") || "model")}`, false);
    this.view.viewport.classList.add("tx-graph", "tx-mrograph");
    this.el.append(this.view.el, this.list, this.src);
  }

  private say(el: HTMLElement): void {
    this.view.message(el);
  }

  async show(): Promise<void> {
    const path = this.ctx.model.get("selected");
    const key = `${path}@${modelRev(this.ctx)}`;
    if (key === this.shown) return;
    this.shown = key;
    const seq = ++this.seq;
    clear(this.list);
    clear(this.src);
    this.say(h("p", { class: "tx-muted" }, "drawing the class graph…"));
    let r: MroReply;
    try {
      r = await this.ctx.rpc.call({ kind: "mro", path });
    } catch (e) {
      if (seq !== this.seq) return;
      this.shown = null;
      this.say(h("p", { class: "tx-note" }, messageOf(e)));
      return;
    }
    if (seq !== this.seq) return;
    this.renderList(path, r.classes);
    try {
      const render = await this.loader(this.ctx.rpc);
      if (seq !== this.seq) return;
      const svg = render(r.dot) as SVGSVGElement;
      this.view.show(svg);
      // The module's own class is at the bottom (bases above it): start there.
      this.view.viewport.scrollTop = this.view.viewport.scrollHeight;
      this.wireNodes(svg, path, r.classes);
    } catch (e) {
      if (seq !== this.seq) return;
      this.say(h("p", { class: "tx-note" }, `graph unavailable: ${messageOf(e)}`));
    }
  }

  private renderList(path: string, classes: MroClass[]): void {
    this.list.appendChild(h("span", { class: "tx-muted" }, "MRO: "));
    classes.forEach((c, i) => {
      const b = h("button", { type: "button", class: `tx-chip tx-${c.group}`, title: c.qualname }, c.name);
      b.addEventListener("click", () => void this.showClass(path, c));
      this.list.appendChild(b);
      if (i < classes.length - 1) this.list.appendChild(h("span", { class: "tx-muted" }, " → "));
    });
  }

  private wireNodes(svg: Element, path: string, classes: MroClass[]): void {
    const byNode = new Map<string, MroClass>();
    for (const c of classes) {
      byNode.set(c.node, c);
      byNode.set(c.qualname, c);
    }
    svg.querySelectorAll("g.node").forEach((g) => {
      const title = g.querySelector("title")?.textContent ?? "";
      const c = byNode.get(title);
      if (!c) return;
      // The group picks the node's tint in styles.css, from the theme's colours.
      g.classList.add(`tx-${c.group}`);
      (g as SVGGElement).style.cursor = "pointer";
      g.setAttribute("role", "button");
      g.setAttribute("aria-label", `source of ${c.name}`);
      g.addEventListener("click", () => void this.showClass(path, c));
    });
  }

  private async showClass(path: string, c: MroClass): Promise<void> {
    clear(this.src);
    this.src.appendChild(h("p", { class: "tx-muted" }, `loading ${c.qualname}…`));
    try {
      const r = await this.ctx.rpc.call({ kind: "source", path, cls: c.qualname });
      renderSource(this.src, r);
    } catch (e) {
      clear(this.src);
      this.src.appendChild(h("p", { class: "tx-note" }, messageOf(e)));
    }
  }
}
