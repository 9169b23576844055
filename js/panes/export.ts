// The Export tab: which ops torch.export, ONNX, ExecuTorch and AOTInductor cannot take, on their
// modules (tx.export_check on the explorer's example inputs; the `export_state` traitlet,
// src/torchxray/_view/export_view.py). Slow, so it runs on Check only; after a patch the tab says
// the check is stale, and Check again lists what changed. The tree's rows carry one target's
// verdict at a time (✓ / ✗ / delegated / portable), and drift is a figure the tree can be
// coloured by. Everything drawn here comes from the model or torch: text only.
import { clear, h, uid } from "../dom";
import type { ExportIssueRow, ExportState, ExportTargetRow } from "../protocol";
import { fileLine, moduleName } from "./compile";
import type { Ctx, Pane } from "./context";

export const TARGETS = ["export", "onnx", "executorch", "aoti"] as const;
const LONG_TIMEOUT_MS = 20 * 60_000;
const TARGET_TITLES: Record<string, string> = {
  export: "torch.export (strict=False; every target's first stage)",
  onnx: "ONNX: the dynamo exporter's decomposition and dispatch; drift in onnxruntime",
  executorch: "ExecuTorch: Core ATen check and XNNPACK delegation (slow: it lowers the model)",
  aoti: "AOTInductor: a real C++ compile of the model (slow: minutes on a big model)",
};
const INTRO =
  "Check exports the model with torch.export and hands the program to each target ticked: every op a target cannot take is listed on its module and line, and when the explorer probes with real tensors (its real mode) each module's output is compared between onnxruntime and eager (drift). It runs only when asked: after Apply, Undo or Redo the result is marked stale.";

/** The badge a row carries for one target's status (TreeSelect.BADGES has their text). */
export function rowBadge(status: string | undefined): string | null {
  switch (status) {
    case "ok":
      return "x-ok";
    case "fails":
      return "x-fails";
    case "delegated":
      return "x-delegated";
    case "portable":
      return "x-portable";
    case "partly delegated":
      return "x-partly";
    default:
      return null;
  }
}

/** The rows' badges for `target` (none for a target the check did not run). */
export function exportBadges(s: Partial<ExportState>, target: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!target || !s.rows || s.status === "running" || s.status === "none") return out;
  for (const [path, per] of Object.entries(s.rows)) {
    const b = rowBadge(per[target]);
    if (b) out[path] = b;
  }
  return out;
}

/** The headline for a state. */
export function exportVerdict(s: Partial<ExportState>): string {
  const blocking = (s.issues ?? []).filter((i) => i.blocking).length;
  switch (s.status) {
    case "ok":
      return `Every target checked takes the model (${(s.asked ?? []).join(", ")}).`;
    case "fails":
      return `${blocking} issue${blocking === 1 ? "" : "s"} block export:`;
    case "error":
      return "The check could not run.";
    case "running":
      return "Checking…";
    default:
      return "Not checked yet.";
  }
}

/** A drift value as text: "2.4e-7". */
export function driftText(v: number): string {
  return v === 0 ? "0" : v.toExponential(1);
}

/** The issues of `path` and its subtree ("" is the model). */
export function issuesUnder(issues: readonly ExportIssueRow[], path: string): ExportIssueRow[] {
  return issues.filter((i) => !path || i.path === path || i.path.startsWith(`${path}.`));
}

export class ExportPane implements Pane {
  readonly el = h("div", { class: "tx-export" });
  private readonly check = h("button", { type: "button", class: "tx-primary" }, "Check");
  private readonly boxes = new Map<string, HTMLInputElement>();
  readonly shown = h("select", { "aria-label": "mark the tree's rows with" });
  private readonly progress = h("div", { class: "tx-cprogress", hidden: true }, h("progress", { "aria-label": "export check running" }), " checking: exporting the model…");
  private readonly body = h("div", { class: "tx-xbody", "aria-live": "polite" });
  private running = false;
  private failure = "";

  constructor(
    private readonly ctx: Ctx,
    /** Sets the tree's rows' badges (TreeSelect.setBadges("export", ...)). */
    private readonly badges: (b: Record<string, string>) => void = () => undefined,
    /** Colours the tree by a figure ("drift"). */
    private readonly colourBy: (figure: string) => void = () => undefined,
  ) {
    this.check.addEventListener("click", () => void this.run());
    const ticks = h("span", { class: "tx-xtargets", role: "group", "aria-label": "targets" });
    for (const t of TARGETS) {
      const box = h("input", { type: "checkbox", id: uid(`xt-${t}`) });
      box.checked = t === "export" || t === "onnx";
      box.disabled = t === "export"; // the first stage of every target
      this.boxes.set(t, box);
      ticks.appendChild(h("label", { for: box.id, title: TARGET_TITLES[t] }, box, ` ${t}`));
    }
    this.shown.appendChild(h("option", { value: "" }, "nothing"));
    for (const t of TARGETS) this.shown.appendChild(h("option", { value: t }, t));
    this.shown.value = "onnx";
    this.shown.addEventListener("change", () => this.syncBadges());
    this.el.append(
      h("div", { class: "tx-ccontrols" }, this.check, ticks, h("label", { title: "each row's verdict for one target: ✓ takes it, ✗ fails in its subtree" }, "rows: ", this.shown)),
      this.progress,
      this.body,
    );
  }

  private state(): Partial<ExportState> {
    return (this.ctx.model.get("export_state") as Partial<ExportState> | undefined) ?? {};
  }

  private targets(): string[] {
    return TARGETS.filter((t) => this.boxes.get(t)?.checked);
  }

  /** Runs the check (the Check button) for the targets ticked. */
  async run(): Promise<void> {
    if (this.running || this.ctx.readonly) return;
    this.running = true;
    this.failure = "";
    this.show();
    // ExecuTorch's lowering and AOTInductor's C++ compile can take minutes on a big model: the
    // reply is waited for longer than the slow kinds' 3 minutes then.
    const targets = this.targets();
    const long = targets.includes("aoti") || targets.includes("executorch") ? LONG_TIMEOUT_MS : undefined;
    const reply = await this.ctx.run("export check", () => this.ctx.rpc.call({ kind: "export", targets }, long));
    this.running = false;
    if (!reply) this.failure = "The check could not run: see the message above.";
    this.show();
  }

  /** The tree's badges for the target picked (widget.ts calls it when the state changes). */
  syncBadges(): void {
    const s = this.state();
    this.badges(s.stale ? {} : exportBadges(s, this.shown.value));
  }

  show(): void {
    const s = this.state();
    this.check.textContent = s.status && s.status !== "none" ? "Check again" : "Check";
    this.check.disabled = this.running || this.ctx.readonly;
    this.progress.hidden = !this.running;
    clear(this.body);
    if (this.ctx.readonly && !s.status) {
      this.body.appendChild(h("p", { class: "tx-muted" }, "The export check needs a kernel: this is a read-only snapshot."));
      return;
    }
    if (this.failure && !this.running) this.body.appendChild(h("p", { class: "tx-bad" }, this.failure));
    if (s.stale) {
      const again = h("button", { type: "button" }, "Check again");
      again.addEventListener("click", () => void this.run());
      this.body.appendChild(h("div", { class: "tx-rstale tx-xstale", role: "status" }, "The model changed since this check (a patch): what it says may no longer hold.", again));
    }
    this.body.appendChild(h("p", { class: `tx-cverdict tx-c-${s.status === "fails" ? "breaks" : (s.status ?? "none")}` }, exportVerdict(s)));
    if (!s.status || s.status === "none") {
      this.body.appendChild(h("p", { class: "tx-muted" }, INTRO));
      return;
    }
    if (s.status === "error") {
      this.body.appendChild(h("p", { class: "tx-bad tx-cerror" }, s.error ?? ""));
      return;
    }
    if (s.changes?.length) {
      this.body.append(h("h4", {}, "What changed since the check before"), h("ul", { class: "tx-xchanges", "aria-label": "what changed" }, ...s.changes.map((c) => h("li", {}, c))));
    }
    this.body.appendChild(this.targetTable(s.targets ?? []));
    this.body.appendChild(this.selectedPart(s));
    const blocking = (s.issues ?? []).filter((i) => i.blocking);
    if (blocking.length) {
      this.body.append(h("h4", {}, "Every issue"), h("ol", { class: "tx-breaks tx-xissues", "aria-label": "export issues" }, ...blocking.map((i) => this.issueItem(i))));
    }
    const portable = (s.issues ?? []).filter((i) => !i.blocking);
    if (portable.length) {
      const n = portable.reduce((a, i) => a + i.count, 0);
      this.body.appendChild(h("details", { class: "tx-xportable" }, h("summary", {}, `${n} op(s) left to ExecuTorch's portable kernels (not delegated to XNNPACK)`), h("ul", {}, ...portable.map((i) => this.issueItem(i)))));
    }
    this.body.appendChild(this.driftPart(s));
    this.body.appendChild(h("p", { class: "tx-muted" }, `${s.mode} mode; ${Math.round(s.wall_ms ?? 0)} ms`));
    if (s.notes?.length) {
      this.body.append(h("h4", {}, "Notes"), h("ul", { class: "tx-cnotes" }, ...s.notes.map((n) => h("li", { class: "tx-muted" }, n))));
    }
  }

  private targetTable(rows: readonly ExportTargetRow[]): HTMLElement {
    const tr = (r: ExportTargetRow) => {
      const what = r.target === "executorch" && r.status === "ok" ? `${r.delegated} op(s) delegated to XNNPACK, ${r.portable} portable${r.message ? `; ${r.message}` : ""}` : r.message;
      return h("tr", { class: `tx-x-${r.status.replace(/ /g, "-")}` }, h("td", {}, r.target), h("td", { class: "tx-xstatus" }, r.status), h("td", {}, `${r.seconds.toFixed(2)} s`), h("td", {}, what));
    };
    return h("table", { class: "tx-rtable tx-xtable", "aria-label": "targets" }, h("thead", {}, h("tr", {}, h("th", {}, "target"), h("th", {}, "status"), h("th", {}, "time"), h("th", {}, "what"))), h("tbody", {}, ...rows.map(tr)));
  }

  /** The selected row: its verdict per target, its drift, and its subtree's failing ops. */
  private selectedPart(s: Partial<ExportState>): HTMLElement {
    const path = this.ctx.model.get("selected") ?? "";
    const box = h("section", { class: "tx-xselected", "aria-label": "selected module" });
    const per = s.rows?.[path];
    box.appendChild(h("h4", {}, `Selected: ${path || "(model)"}`));
    if (!per) {
      box.appendChild(h("p", { class: "tx-muted" }, "the example inputs did not reach this module"));
      return box;
    }
    const marks = Object.entries(per).map(([t, st]) => h("span", { class: `tx-xmark tx-x-${st.replace(/ /g, "-")}` }, `${t}: ${st}`));
    box.appendChild(h("p", { class: "tx-xmarks" }, ...marks));
    const d = s.drift?.[path];
    if (d) box.appendChild(h("p", {}, `drift in onnxruntime: max abs ${driftText(d[0])}, relative ${driftText(d[1])}`));
    const mine = issuesUnder(s.issues ?? [], path).filter((i) => i.blocking);
    if (mine.length) box.appendChild(h("ul", { class: "tx-xmine", "aria-label": "failing ops of the selected module" }, ...mine.map((i) => this.issueItem(i))));
    else box.appendChild(h("p", { class: "tx-muted" }, "no failing op in this module or below it"));
    return box;
  }

  private driftPart(s: Partial<ExportState>): HTMLElement {
    const box = h("section", { class: "tx-xdrift", "aria-label": "drift" }, h("h4", {}, "Drift (onnxruntime vs eager)"));
    const entries = Object.entries(s.drift ?? {});
    if (!entries.length) {
      box.appendChild(h("p", { class: "tx-muted" }, "not measured: it needs an ONNX model built on real weights, a real probe (the explorer's mode) and eval mode (see the notes)"));
      return box;
    }
    const [worst, v] = entries.reduce((a, b) => (b[1][0] > a[1][0] ? b : a));
    const colour = h("button", { type: "button" }, "colour the tree by drift");
    colour.addEventListener("click", () => this.colourBy("drift"));
    const link = h("button", { type: "button", class: "tx-link tx-cmodule", title: `select ${worst || "the model"} in the tree` }, worst || "(model)");
    link.addEventListener("click", () => this.ctx.select(worst));
    box.appendChild(h("p", {}, `${entries.length} modules compared; the largest drift is ${driftText(v[0])} in `, link, ". ", colour));
    return box;
  }

  private where(i: ExportIssueRow): HTMLElement {
    const text = fileLine(i.file, i.line);
    const open = this.ctx.openSource;
    if (!open || !i.src_cls || !i.file) return h("span", { class: "tx-cwhere", title: i.file ? `${i.file}:${i.line}` : "" }, text);
    const b = h("button", { type: "button", class: "tx-link tx-cwhere", title: `open ${i.file} at line ${i.line} in the Source tab` }, text);
    b.addEventListener("click", () => open(i.path, i.src_cls, i.line));
    return b;
  }

  private issueItem(i: ExportIssueRow): HTMLElement {
    const mod = h("button", { type: "button", class: "tx-link tx-cmodule", title: `select ${i.path || "the model"} in the tree` }, moduleName(i.path, i.cls));
    mod.addEventListener("click", () => this.ctx.select(i.path));
    const times = i.count > 1 ? ` ×${i.count}` : "";
    const li = h("li", { class: "tx-break tx-xissue" });
    li.append(
      h("div", { class: "tx-breakhead" }, h("span", { class: "tx-xtarget" }, i.target), mod, " ", this.where(i)),
      h("div", { class: "tx-breakkind" }, h("strong", {}, i.kind), ": ", h("code", {}, i.op), times),
    );
    if (i.source) li.appendChild(h("pre", { class: "tx-pre tx-breakline" }, i.source));
    if (i.reason) li.appendChild(h("p", { class: "tx-breakreason tx-muted" }, i.reason));
    return li;
  }
}
