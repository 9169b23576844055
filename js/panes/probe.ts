// Probe results: every module's shapes, the diff against the previous probe highlighted, a banner
// naming the module that failed, and the fake/real switch; runs of identical blocks fold
// (probe_fold.ts) and a row leads to its module in the tree. Mirrors src/torchxray/probe.py.
import { clear, formatBytes, formatCount, h, uid } from "../dom";
import type { ProbeMode, ProbeRow, ProbeSummary, ProbeTableReply } from "../protocol";
import { messageOf, type Ctx, type Pane } from "./context";
import { FlowView } from "./flow";
import { classCell, pathCell, shapesCell } from "./probe_cells";
import { foldRuns, isProbeFold, type ProbeFold } from "./probe_fold";
import { realProbeButton } from "./real_probe";
import { SummaryTools } from "./summary";

export type { ProbeRow };

const PAGE = 500;

/** The optional columns: each shows when some row has a value for it. */
interface Columns {
  calls: boolean; // some module ran more or less than once
  before: boolean;
  flops: boolean;
  real: boolean;
}

type Totals = Pick<ProbeRow, "flops" | "time_ms" | "mem_peak">;

function lastName(path: string): string {
  return path.slice(path.lastIndexOf(".") + 1);
}

export function failureText(p: ProbeSummary): string | null {
  if (p.ok !== false || !p.error) return null;
  const e = p.error;
  return `${e.path || "(model)"} (${e.cls}) failed: ${e.exc_type}: ${e.message}`;
}

export class ProbePane implements Pane {
  readonly el = h("div", { class: "tx-probepane" });
  private shown = -1;
  private rows: ProbeRow[] = [];
  private total = 0;
  private readonly open = new Set<string>(); // folds the person opened, by first block path
  private view: "table" | "tree" = "table";
  private readonly flow: FlowView;
  private readonly summary: SummaryTools; // Copy summary / Download CSV
  constructor(private readonly ctx: Ctx) {
    this.flow = new FlowView(ctx);
    this.summary = new SummaryTools(ctx);
  }

  async show(force = false): Promise<void> {
    const p = this.ctx.model.get("probe_summary");
    if (p.rev === this.shown && !force) return;
    if (p.rev !== this.shown) {
      this.flow.reset();
      this.summary.changed();
    }
    this.shown = p.rev;
    this.rows = [];
    this.open.clear();
    clear(this.el);
    this.el.append(this.controls(p), this.summary.el, this.banner(p));
    if (p.ok === null) return;
    if (this.view === "tree") {
      this.el.appendChild(this.flow.el);
      await this.flow.load();
      return;
    }
    await this.more();
  }

  /** Table or call tree (the flow of calls). */
  private toggle(): HTMLElement {
    const box = h("span", { class: "tx-viewtoggle", role: "group", "aria-label": "probe view" });
    for (const [view, label] of [["table", "Table"], ["tree", "Call tree"]] as const) {
      const b = h("button", { type: "button", "aria-pressed": String(this.view === view) }, label);
      b.addEventListener("click", () => {
        if (this.view === view) return;
        this.view = view;
        void this.show(true);
      });
      box.appendChild(b);
    }
    return box;
  }

  private controls(p: ProbeSummary): HTMLElement {
    const id = uid("mode");
    const mode = h("select", { id });
    mode.append(
      h("option", { value: "fake" }, "fake (shapes and FLOPs; no memory, no compute)"),
      h("option", { value: "real" }, "real (runs the model; time per module)"),
    );
    mode.value = this.ctx.model.get("probe_mode") || "fake";
    const run = h("button", { type: "button" }, "Run probe");
    if (this.ctx.readonly) {
      mode.disabled = true;
      run.disabled = true;
    }
    mode.addEventListener("change", () => {
      this.ctx.model.set("probe_mode", mode.value as ProbeMode);
      this.ctx.model.save_changes();
    });
    run.addEventListener("click", () => {
      void this.ctx.run("probe", () => this.ctx.rpc.call({ kind: "probe", mode: mode.value as ProbeMode }));
    });
    const summary = p.ok === null ? p.status : `${p.status} · mode ${p.mode}${p.changed ? ` · ${p.changed} changed` : ""}`;
    const bar = h("div", { class: "tx-buttons" }, h("label", { for: id }, "mode"), mode, run, h("span", { class: "tx-muted" }, summary));
    if (p.ok !== null) bar.appendChild(this.toggle());
    return bar;
  }

  private banner(p: ProbeSummary): HTMLElement | string {
    const text = failureText(p);
    if (!text || !p.error) return "";
    const box = h("div", { class: "tx-banner tx-bad" }, h("strong", {}, `Probe failed at ${p.error.path || "(model)"}`), h("div", {}, text));
    if (p.error.input_shapes) box.appendChild(h("div", {}, `inputs: ${p.error.input_shapes}`));
    if (p.error.hint) box.appendChild(h("div", { class: "tx-hint" }, p.error.hint));
    const go = h("button", { type: "button" }, "Select it");
    go.addEventListener("click", () => this.ctx.select(p.error?.path ?? ""));
    box.appendChild(go);
    // Fake tensors cannot run this forward (a data-dependent op); the real probe can.
    if (p.error.remedy === "real" && p.mode !== "real" && !this.ctx.readonly) box.appendChild(realProbeButton(this.ctx, "tx-runreal"));
    return box;
  }

  private async more(): Promise<void> {
    let r: ProbeTableReply;
    try {
      r = await this.ctx.rpc.call({ kind: "probe_table", offset: this.rows.length, limit: PAGE });
    } catch (e) {
      this.el.appendChild(h("p", { class: "tx-note" }, messageOf(e)));
      return;
    }
    if (this.view !== "table") return; // switched to the call tree meanwhile
    const first = this.rows.length === 0;
    this.rows.push(...r.rows);
    this.total = r.total;
    if (first && r.removed.length) {
      this.el.appendChild(h("p", { class: "tx-removed tx-bad" }, `removed since the previous probe: ${r.removed.join(", ")}`));
    }
    if (first && r.not_reached?.length) this.el.appendChild(this.notReached(r));
    this.renderTable();
  }

  /** "Not reached: 312 modules after bn1", closed; open, the outermost of them, each a link
   * to its row in the tree (what is under them was not reached either). */
  private notReached(r: ProbeTableReply): HTMLElement {
    const where = this.ctx.model.get("probe_summary")?.error?.path || "(model)";
    const total = r.not_reached_total ?? r.not_reached.length;
    const n = `${total} module${total === 1 ? "" : "s"}`;
    const box = h("details", { class: "tx-removed tx-notreached" }, h("summary", {}, `not reached: ${n} (the probe stopped at ${where})`));
    const list = h("div", { class: "tx-chips" });
    for (const path of r.not_reached) {
      const b = h("button", { type: "button", class: "tx-chip", title: `select ${path} in the tree` }, path);
      b.addEventListener("click", () => this.ctx.select(path));
      list.appendChild(b);
    }
    const more = r.not_reached.length >= 100 ? " (the first 100)" : ""; // the kernel sends 100 at most
    box.append(h("div", { class: "tx-muted" }, `the outermost${more}; what is under each was not reached either:`), list);
    return box;
  }

  private renderTable(): void {
    if (this.view !== "table") return; // a page that arrived after the switch to the call tree
    this.el.querySelector(".tx-tablewrap")?.remove();
    // Fake mode counts FLOPs and measures nothing; real mode measures and counts FLOPs only when
    // asked (probe.py): each column shows when some row has it, "before" when something changed.
    const cols: Columns = {
      calls: this.rows.some((x) => x.calls !== 1),
      before: this.rows.some((x) => x.status === "changed" || x.status === "added"),
      flops: this.rows.some((x) => x.flops !== null),
      real: this.rows.some((x) => x.time_ms !== null),
    };
    // "calls" shows where some module ran other than once; a narrow pane hides the input column
    // (styles.css), each output cell's title keeps the input.
    const head = ["module", "class", ...(cols.calls ? ["calls"] : []), "input", "output"];
    if (cols.before) head.push("before");
    if (cols.flops) head.push("FLOPs");
    if (cols.real) head.push("time", "peak mem");
    const th = (x: string) => h("th", { class: x === "input" ? "tx-col-in" : undefined }, x);
    const table = h("table", { class: "tx-table tx-probetable" }, h("thead", {}, h("tr", {}, ...head.map(th))));
    const body = h("tbody");
    for (const line of foldRuns(this.rows, this.open)) {
      body.appendChild(isProbeFold(line) ? this.foldRow(line, cols) : this.row(line, cols));
    }
    table.appendChild(body);
    const wrap = h("div", { class: "tx-tablewrap" }, table);
    if (this.rows.length < this.total) {
      const b = h("button", { type: "button" }, `Show more (${this.total - this.rows.length} left)`);
      b.addEventListener("click", () => void this.more());
      wrap.appendChild(b);
    }
    this.el.appendChild(wrap);
  }

  private row(row: ProbeRow, cols: Columns, label?: HTMLElement, totals: Totals = row): HTMLTableRowElement {
    // The table fits the pane without a sideways scroll (probe_cells.ts): a module is its name
    // at its depth, a list of shapes its first entry and "+N more", broken only between entries.
    const wrapped = shapesCell;
    const input = wrapped(row.inputs);
    input.classList.add("tx-col-in");
    const output = wrapped(row.outputs);
    output.title = `input: ${row.inputs}\noutput: ${output.title || row.outputs}`;
    const tr = h("tr", { class: `tx-${row.status}`, title: row.status }, label ?? pathCell(row.path), classCell(row.cls));
    if (cols.calls) tr.append(h("td", {}, String(row.calls)));
    tr.append(input, output);
    if (cols.before) tr.append(wrapped(row.status === "changed" ? (row.before ?? "") : row.status === "added" ? "(new)" : ""));
    if (cols.flops) tr.append(h("td", {}, totals.flops === null ? "" : formatCount(totals.flops)));
    if (cols.real) {
      tr.append(
        h("td", {}, totals.time_ms === null ? "" : `${totals.time_ms.toFixed(3)} ms`),
        h("td", {}, totals.mem_peak === null ? "" : formatBytes(totals.mem_peak)),
      );
    }
    // The table is a way into the tree: a click selects the module there.
    if (!label) tr.addEventListener("click", () => this.ctx.select(row.path));
    return tr;
  }

  /** One row for a run of identical blocks: the first one's shapes, FLOPs and time summed. */
  private foldRow(fold: ProbeFold<ProbeRow>, cols: Columns): HTMLTableRowElement {
    const sum = (k: "flops" | "time_ms") =>
      fold.heads.some((x) => x[k] === null) ? null : fold.heads.reduce((a, x) => a + (x[k] ?? 0), 0);
    const peaks = fold.heads.map((x) => x.mem_peak).filter((x): x is number => x !== null);
    const totals = { flops: sum("flops"), time_ms: sum("time_ms"), mem_peak: peaks.length ? Math.max(...peaks) : null };
    const last = lastName(fold.heads[fold.heads.length - 1].path);
    const label = pathCell(fold.key, `${lastName(fold.key)}–${last} ×${fold.count}`, `${fold.key}–${last} ×${fold.count}`);
    label.title = `${fold.count} identical blocks: the first one's shapes; FLOPs and time of all`;
    label.firstElementChild?.prepend(h("span", { class: "tx-caret", "aria-hidden": "true" }, fold.open ? "▾" : "▸"));
    const tr = this.row(fold.heads[0], cols, label, totals);
    tr.classList.add("tx-foldrow");
    tr.setAttribute("aria-expanded", String(fold.open));
    tr.addEventListener("click", () => {
      if (fold.open) this.open.delete(fold.key);
      else this.open.add(fold.key);
      this.renderTable();
    });
    return tr;
  }
}
