// Probe results: every module's shapes, the diff against the previous probe highlighted, a banner
// naming the module that failed, and the fake/real switch. Mirrors src/torchxray/probe.py.
import { clear, formatBytes, formatCount, h, uid } from "../dom";
import type { ProbeSummary } from "../protocol";
import { messageOf, type Ctx, type Pane } from "./context";

export interface ProbeRow {
  path: string;
  cls: string;
  calls: number;
  inputs: string;
  outputs: string;
  status: "same" | "changed" | "added" | "failed";
  before: string | null;
  flops: number | null;
  time_ms: number | null;
  mem_peak: number | null;
}

interface TableReply {
  kind: "probe_table";
  rows: ProbeRow[];
  total: number;
  removed: string[];
  not_reached?: string[]; // after a failed probe: modules it stopped before (not removed)
  rev: number;
}

const PAGE = 500;

export function failureText(p: ProbeSummary): string | null {
  if (p.ok !== false || !p.error) return null;
  const e = p.error;
  return `${e.path || "(model)"} (${e.cls}) failed: ${e.exc_type}: ${e.message}`;
}

export class ProbePane implements Pane {
  readonly el = h("div", { class: "tx-probepane" });
  private shown = -1;
  private rows: ProbeRow[] = [];
  constructor(private readonly ctx: Ctx) {}

  async show(force = false): Promise<void> {
    const p = this.ctx.model.get("probe");
    if (p.rev === this.shown && !force) return;
    this.shown = p.rev;
    this.rows = [];
    clear(this.el);
    this.el.append(this.controls(p), this.banner(p));
    if (p.ok === null) return;
    await this.more();
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
      this.ctx.model.set("probe_mode", mode.value);
      this.ctx.model.save_changes();
    });
    run.addEventListener("click", () => {
      void this.ctx.run("probe", () => this.ctx.rpc.call({ kind: "probe", mode: mode.value }));
    });
    const summary = p.ok === null ? p.status : `${p.status} · mode ${p.mode}${p.changed ? ` · ${p.changed} changed` : ""}`;
    return h("div", { class: "tx-buttons" }, h("label", { for: id }, "mode"), mode, run, h("span", { class: "tx-muted" }, summary));
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
    return box;
  }

  private async more(): Promise<void> {
    let r: TableReply;
    try {
      r = await this.ctx.rpc.call<TableReply>({ kind: "probe_table", offset: this.rows.length, limit: PAGE });
    } catch (e) {
      this.el.appendChild(h("p", { class: "tx-note" }, messageOf(e)));
      return;
    }
    const first = this.rows.length === 0;
    this.rows.push(...r.rows);
    this.el.querySelector(".tx-tablewrap")?.remove();
    if (first && r.removed.length) {
      this.el.appendChild(h("p", { class: "tx-removed tx-bad" }, `removed since the previous probe: ${r.removed.join(", ")}`));
    }
    if (first && r.not_reached?.length) {
      const where = this.ctx.model.get("probe")?.error?.path || "(model)";
      this.el.appendChild(
        h("p", { class: "tx-removed tx-muted" }, `not reached (the probe stopped at ${where}): ${r.not_reached.join(", ")}`),
      );
    }
    // Fake mode counts FLOPs and measures nothing; real mode measures and counts FLOPs only when
    // asked (probe.py): each column shows when some row has it, "before" when something changed.
    const flops = this.rows.some((x) => x.flops !== null);
    const real = this.rows.some((x) => x.time_ms !== null);
    const before = this.rows.some((x) => x.status === "changed" || x.status === "added");
    const head = ["module", "class", "calls", "input", "output"];
    if (before) head.push("before");
    if (flops) head.push("FLOPs");
    if (real) head.push("time", "peak mem");
    const table = h("table", { class: "tx-table" }, h("thead", {}, h("tr", {}, ...head.map((x) => h("th", {}, x)))));
    const body = h("tbody");
    // Paths and shapes wrap (styles.css), so the table fits the pane without a sideways scroll.
    const wrapped = (text: string) => h("td", { class: "tx-wrap tx-mono" }, text);
    for (const row of this.rows) {
      const tr = h(
        "tr",
        { class: `tx-${row.status}`, title: row.status },
        h("td", { class: "tx-wrap", title: "click to select it in the tree" }, row.path || "(model)"),
        h("td", {}, row.cls),
        h("td", {}, String(row.calls)),
        wrapped(row.inputs),
        wrapped(row.outputs),
      );
      if (before) tr.append(wrapped(row.status === "changed" ? (row.before ?? "") : row.status === "added" ? "(new)" : ""));
      if (flops) tr.append(h("td", {}, row.flops === null ? "" : formatCount(row.flops)));
      if (real) {
        tr.append(
          h("td", {}, row.time_ms === null ? "" : `${row.time_ms.toFixed(3)} ms`),
          h("td", {}, row.mem_peak === null ? "" : formatBytes(row.mem_peak)),
        );
      }
      // The table is a way into the tree: a click selects the module there (issue #16).
      tr.addEventListener("click", () => this.ctx.select(row.path));
      body.appendChild(tr);
    }
    table.appendChild(body);
    const wrap = h("div", { class: "tx-tablewrap" }, table);
    if (this.rows.length < r.total) {
      const b = h("button", { type: "button" }, `Show more (${r.total - this.rows.length} left)`);
      b.addEventListener("click", () => void this.more());
      wrap.appendChild(b);
    }
    this.el.appendChild(wrap);
  }
}
