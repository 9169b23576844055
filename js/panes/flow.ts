// The Probe tab's call tree: every module call of the last probe in the order it began,
// indented by depth, "#index" where a module ran more than once, runs of identical sibling calls
// folded into one line until opened (as the tree folds blocks), paged. A line selects its module.
// Mirrors the kernel's "flow" request (src/torchxray/_view/tools_flow.py).
import { clear, formatCount, h } from "../dom";
import type { FlowLine, FlowReply } from "../protocol";
import { messageOf, type Ctx } from "./context";

export type { FlowLine };

const PAGE = 500;
const INDENT = 14; // px per level

function lastName(path: string): string {
  return path.slice(path.lastIndexOf(".") + 1);
}

/** The line's figure, right-aligned: its time after a real probe, else its FLOPs. */
function figure(line: FlowLine): HTMLElement | string {
  if (line.time_ms !== null && line.time_ms !== undefined) {
    return h("span", { class: "tx-flowfig", title: "time of this call (real probe)" }, `${line.time_ms.toFixed(3)} ms`);
  }
  if (line.flops) return h("span", { class: "tx-flowfig", title: "FLOPs of this call (fake probe)" }, `${formatCount(line.flops)} FLOPs`);
  return "";
}

export class FlowView {
  // A list, not a second role=tree: the model tree's rows stay the only treeitems in the widget.
  readonly el = h("div", { class: "tx-flow", role: "list", "aria-label": "call tree" });
  private lines: FlowLine[] = [];
  private total = 0;
  private readonly open = new Set<string>(); // folds the person opened, by key
  constructor(private readonly ctx: Ctx) {}

  /** (Re)loads from the first line: a new probe, or a fold opened or closed. */
  async load(): Promise<void> {
    this.lines = [];
    await this.more(true);
  }

  /** Forgets opened folds (their keys are positions in one probe's flow). */
  reset(): void {
    this.open.clear();
  }

  private async more(fresh = false): Promise<void> {
    let r: FlowReply;
    try {
      const open = [...this.open];
      r = await this.ctx.rpc.call({ kind: "flow", offset: this.lines.length, limit: PAGE, open });
    } catch (e) {
      clear(this.el);
      this.el.appendChild(h("p", { class: "tx-note" }, messageOf(e)));
      return;
    }
    if (fresh) this.lines = [];
    this.lines.push(...r.lines);
    this.total = r.total;
    this.render(r);
  }

  private render(r: FlowReply): void {
    clear(this.el);
    if (r.note) this.el.appendChild(h("p", { class: "tx-muted" }, r.note));
    if (r.calls) this.el.appendChild(h("p", { class: "tx-muted" }, `${r.calls} calls, in the order they began`));
    for (const line of this.lines) this.el.appendChild(line.count ? this.fold(line) : this.call(line));
    if (this.lines.length < this.total) {
      const b = h("button", { type: "button" }, `Show more (${this.total - this.lines.length} left)`);
      b.addEventListener("click", () => void this.more());
      this.el.appendChild(b);
    }
  }

  private call(line: FlowLine): HTMLElement {
    const index = line.calls > 1 ? ` #${line.index}` : "";
    const row = h(
      "div",
      { class: "tx-flowline", role: "listitem", "data-depth": String(line.depth), title: `${line.path || "(model)"}: click to select it` },
      h("span", { class: "tx-flowname" }, `${line.path ? lastName(line.path) : "(model)"}${index}`),
      h("span", { class: "tx-muted" }, ` ${line.cls}`),
      figure(line),
    );
    row.style.paddingLeft = `${line.depth * INDENT}px`;
    row.addEventListener("click", () => this.ctx.select(line.path));
    return row;
  }

  private fold(line: FlowLine): HTMLElement {
    const row = h(
      "div",
      {
        class: "tx-flowline tx-foldrow",
        role: "listitem",
        "data-depth": String(line.depth),
        "aria-expanded": String(line.open),
        title: `${line.count} identical calls: ${line.path} to ${line.last} (click to ${line.open ? "fold" : "open"})`,
      },
      h("span", { class: "tx-caret", "aria-hidden": "true" }, line.open ? "▾" : "▸"),
      h("span", { class: "tx-flowname" }, `×${line.count} ${line.cls}`),
      h("span", { class: "tx-muted" }, ` ${lastName(line.path)}–${lastName(line.last)}`),
      figure(line),
    );
    row.style.paddingLeft = `${line.depth * INDENT}px`;
    row.addEventListener("click", () => {
      if (line.open) this.open.delete(line.key);
      else this.open.add(line.key);
      void this.load();
    });
    return row;
  }
}
