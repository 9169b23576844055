// Source of the selected module's class (or of a class picked in the MRO graph). The markup comes
// from highlight.py (Pygments, which escapes the code); it is the only HTML the widget inserts.
import { clear, h } from "../dom";
import type { SourceReply } from "../protocol";
import { messageOf, type Ctx, type Pane } from "./context";

export type { SourceReply };

/** Renders a source reply into `el`; shared with the MRO pane. */
export function renderSource(el: HTMLElement, r: SourceReply): void {
  clear(el);
  const where = r.file ? `${r.file}${r.line ? `:${r.line}` : ""}` : "";
  el.appendChild(h("div", { class: "tx-srchead" }, h("strong", {}, r.qualname), where ? ` — ${where}` : ""));
  if (r.forward_lines) {
    const [a, b] = r.forward_lines;
    // An inherited `forward = some_function` can live above the class (e.g. Module's): say so
    // rather than promise a mark that is not in the shown source.
    const inside = r.line === null || a >= r.line;
    const text = inside ? `forward: lines ${a}–${b} (marked)` : `forward: lines ${a}–${b} (outside the class body)`;
    el.appendChild(h("div", { class: "tx-muted" }, text));
  }
  if (r.note) el.appendChild(h("div", { class: "tx-muted" }, r.note));
  if (r.html === null || r.html === undefined) {
    el.appendChild(h("p", { class: "tx-note" }, `No source: ${r.reason ?? "unknown reason"}`));
    return;
  }
  const code = h("div", { class: "tx-source" });
  // Pygments output: escaped by the highlighter in the kernel (highlight.py), never model text.
  code.innerHTML = r.html;
  el.appendChild(code);
}

/** Scrolls the pane (only the widget's own scroller, never the notebook) to the marked forward. */
export function scrollToForward(el: HTMLElement): void {
  const mark = el.querySelector(".tx-source .hll");
  const scroller = el.closest(".tx-panels");
  if (!mark || !scroller) return;
  const offset = mark.getBoundingClientRect().top - scroller.getBoundingClientRect().top;
  scroller.scrollTop += offset - 3 * 18; // a few lines of context above `def forward`
}

export class SourcePane implements Pane {
  readonly el = h("div", { class: "tx-sourcepane" });
  private shown: string | null = null;
  private seq = 0;
  constructor(private readonly ctx: Ctx) {}

  async show(): Promise<void> {
    const path = this.ctx.model.get("selected");
    const key = `${path}@${this.ctx.model.get("tree")?.rev}`;
    if (key === this.shown) {
      scrollToForward(this.el);
      return;
    }
    this.shown = key;
    const seq = ++this.seq;
    clear(this.el);
    this.el.appendChild(h("p", { class: "tx-muted" }, "loading source…"));
    try {
      const r = await this.ctx.rpc.call<SourceReply & { [k: string]: unknown }>({ kind: "source", path });
      if (seq === this.seq) {
        renderSource(this.el, r);
        scrollToForward(this.el);
      }
    } catch (e) {
      if (seq !== this.seq) return;
      this.shown = null;
      clear(this.el);
      this.el.appendChild(h("p", { class: "tx-note" }, messageOf(e)));
    }
  }
}
