// The Compile tab: where torch.compile would graph-break and torch.export fails (tx.compile_check
// on the explorer's example inputs; the `compile` traitlet, src/torchxray/_view/compile_view.py).
// Not free, so it runs on Check; the kernel runs it again after every patch from then on. Each
// break names its module (a link that selects its row), torch's kind, reason and hints, torch's
// page on it and the line (a link that opens the Source tab with that line marked). Everything
// drawn here comes from the model or torch: text only. The `compile` state always comes with a
// tree state (host.COMPILE in the kernel), whose change redraws the open tab (widget.ts).
import { clear, h, uid } from "../dom";
import type { BreakRow, CompileState, ExportRow, FilterResult } from "../protocol";
import type { TreeFold } from "../tree_filter";
import type { Ctx, Pane } from "./context";

const INTRO =
  "Check traces the model's forward with torch.compile's dynamo, module by module (fake inputs unless the probe's mode is real: nothing computed). Once checked, it runs again after every Apply, Undo and Redo.";

/** "mlp.act (LoggedGELU)", the root as "(model)". */
export function moduleName(path: string, cls: string): string {
  return `${path || "(model)"} (${cls})`;
}

/** The last part of a file path, with the line: "demo.py:312" (the title keeps the whole path). */
export function fileLine(file: string, line: number): string {
  if (!file) return "(no Python source)";
  const i = Math.max(file.lastIndexOf("/"), file.lastIndexOf("\\"));
  return `${file.slice(i + 1)}:${line}`;
}

/** The headline for a state: what a person reads first. */
export function verdict(s: Partial<CompileState>): string {
  const n = s.breaks?.length ?? 0;
  switch (s.status) {
    case "ok":
      return "One graph: torch.compile captures the whole forward, no graph break.";
    case "breaks":
      return `${n} graph break${n === 1 ? "" : "s"}, in forward order:`;
    case "error":
      return "The check could not run.";
    case "running":
      return "Checking again after the patch…";
    default:
      return "Not checked yet.";
  }
}

/** Only http(s) links are drawn as links (torch's graph-break pages). */
export function safeUrl(url: string): string | null {
  return /^https?:\/\//i.test(url) ? url : null;
}

export class CompilePane implements Pane {
  readonly el = h("div", { class: "tx-compile" });
  private readonly check = h("button", { type: "button", class: "tx-primary" }, "Check");
  private readonly foldBox = h("input", { type: "checkbox", id: uid("cfold") });
  private readonly progress = h("div", { class: "tx-cprogress", hidden: true }, h("progress", { "aria-label": "compile check running" }), " checking: tracing each module with dynamo…");
  private readonly body = h("div", { class: "tx-cbody", "aria-live": "polite" });
  private running = false;
  private failure = "";

  constructor(
    private readonly ctx: Ctx,
    /** Folds the tree to some rows (TreeView.setFold). */
    private readonly fold: (fold: TreeFold | null) => Promise<void> = async () => undefined,
  ) {
    this.check.addEventListener("click", () => void this.run());
    this.foldBox.addEventListener("change", () => void this.syncFold());
    const controls = h(
      "div",
      { class: "tx-ccontrols" },
      this.check,
      h("label", { for: this.foldBox.id, title: "show only the rows whose own forward breaks, and their parents" }, this.foldBox, " fold the tree to breaking rows"),
    );
    this.el.append(controls, this.progress, this.body);
  }

  private state(): Partial<CompileState> {
    return (this.ctx.model.get("compile") as Partial<CompileState> | undefined) ?? {};
  }

  /** Runs the check (the Check button). */
  async run(): Promise<void> {
    if (this.running || this.ctx.readonly) return;
    this.running = true;
    this.failure = "";
    this.show();
    const reply = await this.ctx.run("compile check", () => this.ctx.rpc.call({ kind: "compile" }));
    this.running = false;
    // The reply's state is the traitlet's too; a failed request (no example inputs) says why here.
    if (!reply) this.failure = "The check could not run: see the message above.";
    this.show();
    if (this.foldBox.checked) void this.syncFold();
  }

  private syncFold(): Promise<void> {
    if (!this.foldBox.checked || this.ctx.readonly) return this.fold(null);
    const rows = async (): Promise<FilterResult> => {
      const r = await this.ctx.rpc.call({ kind: "filter", query: "", breaks: true });
      return { count: r.count, rows: r.rows, truncated: r.truncated };
    };
    return this.fold({ label: "breaking rows", rows, ended: () => (this.foldBox.checked = false) });
  }

  show(): void {
    const s = this.state();
    this.check.textContent = s.on ? "Check again" : "Check";
    this.check.disabled = this.running || this.ctx.readonly;
    this.progress.hidden = !this.running && s.status !== "running";
    this.foldBox.disabled = this.ctx.readonly;
    clear(this.body);
    if (this.ctx.readonly && !s.status) {
      this.body.appendChild(h("p", { class: "tx-muted" }, "The compile check needs a kernel: this is a read-only snapshot."));
      return;
    }
    if (this.failure && !this.running) this.body.appendChild(h("p", { class: "tx-bad" }, this.failure));
    const head = h("p", { class: `tx-cverdict tx-c-${s.status ?? "none"}` }, verdict(s));
    this.body.appendChild(head);
    if (!s.status || s.status === "none") {
      this.body.appendChild(h("p", { class: "tx-muted" }, INTRO));
      return;
    }
    if (s.status === "running") return; // its result comes with the probe's (a patch's re-check)
    if (s.status === "error") {
      this.body.appendChild(h("p", { class: "tx-bad tx-cerror" }, s.error ?? ""));
      return;
    }
    if (s.breaks?.length) {
      this.body.appendChild(h("ol", { class: "tx-breaks", "aria-label": "graph breaks" }, ...s.breaks.map((b) => this.breakItem(b))));
    }
    this.body.appendChild(this.exportPart(s));
    const how = `${s.mode} inputs; ${s.modules} module${s.modules === 1 ? "" : "s"} reached, ${s.checked} trace${s.checked === 1 ? "" : "s"}, ${Math.round(s.wall_ms ?? 0)} ms`;
    this.body.appendChild(h("p", { class: "tx-muted" }, how));
    if (s.notes?.length) {
      this.body.append(h("h4", {}, "Not checked"), h("ul", { class: "tx-cnotes" }, ...s.notes.map((n) => h("li", { class: "tx-muted" }, n))));
    }
  }

  private moduleLink(path: string, cls: string): HTMLButtonElement {
    const b = h("button", { type: "button", class: "tx-link tx-cmodule", title: `select ${path || "the model"} in the tree` }, moduleName(path, cls));
    b.addEventListener("click", () => this.ctx.select(path));
    return b;
  }

  private where(path: string, cls: string | null, file: string, line: number): HTMLElement {
    const text = fileLine(file, line);
    const open = this.ctx.openSource;
    if (!open || !cls || !file) return h("span", { class: "tx-cwhere", title: file ? `${file}:${line}` : "" }, text);
    const b = h("button", { type: "button", class: "tx-link tx-cwhere", title: `open ${file} at line ${line} in the Source tab` }, text);
    b.addEventListener("click", () => open(path, cls, line));
    return b;
  }

  private breakItem(b: BreakRow): HTMLElement {
    const li = h("li", { class: "tx-break" });
    li.append(
      h("div", { class: "tx-breakhead" }, this.moduleLink(b.path, b.cls), " ", this.where(b.path, b.src_cls, b.file, b.line)),
      h("div", { class: "tx-breakkind" }, h("strong", {}, b.kind)),
    );
    if (b.source) li.appendChild(h("pre", { class: "tx-pre tx-breakline" }, b.source));
    if (b.reason) li.appendChild(h("p", { class: "tx-breakreason" }, b.reason));
    if (b.hint) li.appendChild(h("details", { class: "tx-breakhint" }, h("summary", {}, "torch's hints"), h("p", { class: "tx-hint" }, b.hint)));
    const url = safeUrl(b.url);
    if (url) li.appendChild(h("a", { href: url, target: "_blank", rel: "noopener noreferrer", class: "tx-breakurl" }, "torch's page on this break"));
    return li;
  }

  private exportPart(s: Partial<CompileState>): HTMLElement {
    const box = h("section", { class: "tx-cexport", "aria-label": "torch.export" }, h("h4", {}, "torch.export"));
    if (!s.export?.length) {
      box.appendChild(h("p", { class: "tx-muted" }, s.export_ok ? "exports (strict=False): no failure" : "not checked"));
      return box;
    }
    const item = (f: ExportRow) =>
      h("li", {}, this.moduleLink(f.path, f.cls), " ", h("strong", {}, f.kind), ": ", f.reason, " ", h("span", { class: "tx-muted", title: f.file }, fileLine(f.file, f.line)));
    box.appendChild(h("ul", { class: "tx-exportfails" }, ...s.export.map(item)));
    return box;
  }
}
