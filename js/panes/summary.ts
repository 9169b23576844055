// The Probe tab's summary tools: ex.summary(depth)'s text (torchinfo's layout) copied or shown, and
// its rows as a CSV download. The kernel builds both (_view/tools_summary.py); this asks for them
// at a depth and hands them on. Mirrors src/torchxray/summary.py.
import { clear, h, uid } from "../dom";
import type { SummaryReply } from "../protocol";
import { messageOf, type Ctx } from "./context";
import { copyText } from "./history";
import { parseSummary, summaryView } from "./summary_table";

const DEPTHS = ["auto", "1", "2", "3", "4", "5", "6", "8", "all"] as const;
const ALL = 1_000_000; // the kernel shows the tree's own depth when asked for more

/** The CSV's file name: the model's class, safe on every file system. */
export function csvName(model: string): string {
  return `${model.replace(/[^\w.-]+/g, "_") || "model"}-summary.csv`;
}

export class SummaryTools {
  readonly el: HTMLElement;
  private readonly depth: HTMLSelectElement;
  private readonly note = h("span", { class: "tx-muted", "aria-live": "polite" });
  // Shown as a table that fits the pane (summary_table.ts); Copy gives the text.
  private readonly text = h("div", { class: "tx-summarytext", tabindex: 0, hidden: true, role: "region", "aria-label": "summary text" });
  private readonly toggle: HTMLButtonElement;

  constructor(private readonly ctx: Ctx) {
    const id = uid("depth");
    this.depth = h("select", { id });
    for (const d of DEPTHS) this.depth.appendChild(h("option", { value: d }, d));
    const copy = h("button", { type: "button", title: "The text summary (torchinfo's layout), as ex.summary() returns it" }, "Copy summary");
    const csv = h("button", { type: "button", title: "One line per module down to the depth: class, outputs, parameters, mult-adds" }, "Download CSV");
    this.toggle = h("button", { type: "button", "aria-expanded": "false" }, "Show summary");
    copy.addEventListener("click", () => void this.copy());
    csv.addEventListener("click", () => void this.download());
    this.toggle.addEventListener("click", () => void this.flip());
    this.depth.addEventListener("change", () => {
      if (!this.text.hidden) void this.fill();
    });
    for (const b of [copy, csv, this.toggle, this.depth]) b.disabled = ctx.readonly;
    const bar = h(
      "div",
      { class: "tx-buttons tx-summarytools", role: "group", "aria-label": "Summary" },
      h("label", { for: id }, "summary depth"),
      this.depth,
      copy,
      csv,
      this.toggle,
      this.note,
    );
    this.el = h("div", {}, bar, this.text);
  }

  /** A new probe or patch: an open summary shows the model as it is now. */
  changed(): void {
    this.note.textContent = "";
    if (!this.text.hidden) void this.fill();
  }

  private async fetch(): Promise<SummaryReply | undefined> {
    const v = this.depth.value;
    const depth = v === "auto" ? null : v === "all" ? ALL : Number(v);
    try {
      return await this.ctx.rpc.call({ kind: "summary", depth });
    } catch (e) {
      this.note.textContent = messageOf(e);
      return undefined;
    }
  }

  private async copy(): Promise<void> {
    const r = await this.fetch();
    if (!r) return;
    const ok = await copyText(r.text);
    const lines = r.text.split("\n").length;
    this.note.textContent = ok ? `copied ${lines} lines (depth ${r.depth} of ${r.deepest})` : "copy failed: Show summary and select the text";
  }

  private async download(): Promise<void> {
    const r = await this.fetch();
    if (!r) return;
    const url = URL.createObjectURL(new Blob([r.csv], { type: "text/csv" }));
    const a = h("a", { href: url, download: csvName(r.name), hidden: true });
    this.el.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
    this.note.textContent = `${csvName(r.name)}: ${r.csv.split("\n").length - 2} modules`;
  }

  private async flip(): Promise<void> {
    const open = this.text.hidden;
    this.text.hidden = !open;
    this.toggle.setAttribute("aria-expanded", String(open));
    this.toggle.textContent = open ? "Hide summary" : "Show summary";
    if (open) await this.fill();
  }

  private async fill(): Promise<void> {
    const r = await this.fetch();
    clear(this.text);
    const grid = r ? parseSummary(r.text) : null;
    if (grid) this.text.appendChild(summaryView(grid));
    else if (r) this.text.appendChild(h("pre", { class: "tx-pre tx-summarypre" }, r.text));
    if (r) this.note.textContent = `depth ${r.depth} of ${r.deepest}`;
  }
}
