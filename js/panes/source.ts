// Source of the selected module's class (or of a class picked in the MRO graph). The markup comes
// from highlight.py (Pygments, which escapes the code); it is the only HTML the widget inserts.
import { clear, h } from "../dom";
import type { CompileState, SourceReply } from "../protocol";
import { messageOf, modelRev, type Ctx, type Pane } from "./context";

export type { SourceReply };

/** Renders a source reply into `el`; shared with the MRO pane. */
export function renderSource(el: HTMLElement, r: SourceReply): void {
  clear(el);
  // A class defined in a notebook: its cell and the line in it, not the kernel's temporary file
  // (the file stays in the tooltip).
  const where = r.cell
    ? `${r.cell}${r.line ? `, line ${r.line}` : ""}`
    : r.file
      ? `${r.file}${r.line ? `:${r.line}` : ""}`
      : "";
  // Sticky (styles.css): the file and line stay in view while the code scrolls.
  const top = h("div", { class: "tx-srctop" });
  const head = h("div", { class: "tx-srchead" }, h("strong", {}, r.qualname), where ? ` — ${where}` : "");
  if (r.cell && r.file) head.title = r.file;
  top.appendChild(head);
  if (r.forward_lines) {
    const [a, b] = r.forward_lines;
    // An inherited `forward = some_function` can live above the class (e.g. Module's): say so
    // rather than promise a mark that is not in the shown source.
    const inside = r.line === null || a >= r.line;
    const text = inside ? `forward: lines ${a}–${b} (marked)` : `forward: lines ${a}–${b} (outside the class body)`;
    top.appendChild(h("div", { class: "tx-muted" }, text));
  }
  if (r.note) top.appendChild(h("div", { class: "tx-muted" }, r.note));
  el.appendChild(top);
  if (r.html === null || r.html === undefined) {
    el.appendChild(h("p", { class: "tx-note" }, `No source: ${r.reason ?? "unknown reason"}`));
    return;
  }
  const code = h("div", { class: "tx-source" });
  // Pygments output: escaped by the highlighter in the kernel (highlight.py), never model text.
  code.innerHTML = r.html;
  el.appendChild(code);
}

/** Scrolls the pane (only the widget's own scroller, never the notebook) so that the marked
 * forward starts near its top, just under the sticky header, with two lines of context above. */
export function scrollToForward(el: HTMLElement): void {
  el.style.paddingBottom = "";
  const mark = el.querySelector(".tx-source .hll");
  const scroller = el.closest(".tx-panels");
  if (!mark || !scroller) return;
  const header = el.querySelector(".tx-srctop")?.getBoundingClientRect().height ?? 0;
  const line = mark.getBoundingClientRect().height || 16;
  // A forward at the end of its class could only reach the pane's bottom edge: room below the
  // code lets it scroll up to the top, as an editor scrolls past the end.
  const below = el.getBoundingClientRect().bottom - mark.getBoundingClientRect().top;
  const short = scroller.clientHeight - header - 2 * line - below;
  if (Number.isFinite(short) && short > 0) el.style.paddingBottom = `${Math.ceil(short)}px`;
  const offset = mark.getBoundingClientRect().top - scroller.getBoundingClientRect().top;
  scroller.scrollTop = Math.max(0, scroller.scrollTop + offset - header - 2 * line);
}

/** Another module's source with one line marked: a call site's caller. */
export interface SourceTarget {
  path: string;
  cls: string | null;
  line: number;
  what?: "call" | "break"; // a caller's line (default) or a graph break's
}

/** The selected module's first graph break (the last compile check) whose line is in a class of
 * its MRO: the Source tab marks that line instead of the forward, and says so. */
export function breakTarget(ctx: Ctx, path: string = ctx.model.get("selected") ?? "", line?: number): (SourceTarget & { kind: string }) | null {
  const state = ctx.model.get("compile") as Partial<CompileState> | undefined;
  const b = state?.breaks?.find((x) => x.path === path && x.src_cls && (line === undefined || x.line === line));
  return b?.src_cls ? { path, cls: b.src_cls, line: b.line, what: "break", kind: b.kind } : null;
}

export class SourcePane implements Pane {
  readonly el = h("div", { class: "tx-sourcepane" });
  private shown: string | null = null;
  private seq = 0;
  private target: SourceTarget | null = null;
  constructor(private readonly ctx: Ctx) {}

  /** Shows `target` (instead of the selected module's class) until the selection changes. */
  at(target: SourceTarget): void {
    this.target = target;
    this.shown = null;
  }

  selectionChanged(): void {
    this.target = null;
  }

  async show(): Promise<void> {
    const broken = this.target ? breakTarget(this.ctx, this.target.path, this.target.line) : breakTarget(this.ctx);
    const t = this.target ?? broken;
    const path = t ? t.path : this.ctx.model.get("selected");
    const key = `${t ? `${t.path}|${t.cls}|${t.line}` : path}@${modelRev(this.ctx)}`;
    if (key === this.shown) {
      scrollToForward(this.el);
      return;
    }
    this.shown = key;
    const seq = ++this.seq;
    clear(this.el);
    this.el.appendChild(h("p", { class: "tx-muted" }, "loading source…"));
    try {
      const what = broken ? { what: "break" as const } : {}; // the kernel's default: a call
      const ask = t ? { kind: "source" as const, path, cls: t.cls, line: t.line, ...what } : { kind: "source" as const, path };
      const r = await this.ctx.rpc.call(ask);
      if (seq === this.seq) {
        renderSource(this.el, r);
        if (t) this.el.querySelector(".tx-source")?.classList.add("tx-callsite");
        const top = this.el.querySelector(".tx-srctop");
        if (broken && top) top.appendChild(h("div", { class: "tx-bad tx-srcbreak" }, `graph break: ${broken.kind}`));
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
