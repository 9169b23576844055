// Source of the selected module's class (or of a class picked in the MRO graph). The markup comes
// from highlight.py (Pygments, which escapes the code); it is the only HTML the widget inserts.
import { clear, h } from "../dom";
import { messageOf, type Ctx, type Pane } from "./context";

export interface SourceReply {
  kind: "source";
  html: string | null;
  file: string | null;
  line: number | null;
  reason: string | null;
  qualname: string;
  forward_lines: [number, number] | null;
}

/** Renders a source reply into `el`; shared with the MRO pane. */
export function renderSource(el: HTMLElement, r: SourceReply): void {
  clear(el);
  const where = r.file ? `${r.file}${r.line ? `:${r.line}` : ""}` : "";
  el.appendChild(h("div", { class: "tx-srchead" }, h("strong", {}, r.qualname), where ? ` — ${where}` : ""));
  if (r.forward_lines) {
    el.appendChild(
      h("div", { class: "tx-muted" }, `forward: lines ${r.forward_lines[0]}–${r.forward_lines[1]} (marked)`),
    );
  }
  if (r.html === null || r.html === undefined) {
    el.appendChild(h("p", { class: "tx-note" }, `No source: ${r.reason ?? "unknown reason"}`));
    return;
  }
  const code = h("div", { class: "tx-source" });
  // Pygments output: escaped by the highlighter in the kernel (highlight.py), never model text.
  code.innerHTML = r.html;
  el.appendChild(code);
  code.querySelector(".tx-fwd")?.scrollIntoView?.({ block: "nearest" });
}

export class SourcePane implements Pane {
  readonly el = h("div", { class: "tx-sourcepane" });
  private shown: string | null = null;
  private seq = 0;
  constructor(private readonly ctx: Ctx) {}

  async show(): Promise<void> {
    const path = this.ctx.model.get("selected");
    const key = `${path}@${this.ctx.model.get("tree")?.rev}`;
    if (key === this.shown) return;
    this.shown = key;
    const seq = ++this.seq;
    clear(this.el);
    this.el.appendChild(h("p", { class: "tx-muted" }, "loading source…"));
    try {
      const r = await this.ctx.rpc.call<SourceReply & { [k: string]: unknown }>({ kind: "source", path });
      if (seq === this.seq) renderSource(this.el, r);
    } catch (e) {
      if (seq !== this.seq) return;
      this.shown = null;
      clear(this.el);
      this.el.appendChild(h("p", { class: "tx-note" }, messageOf(e)));
    }
  }
}
