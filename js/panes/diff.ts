// The Diff tab: the model now against the model when the explorer opened, or against a
// checkpoint file the person names. Lists what changed (modules added, removed, retyped or with
// other hyperparameters; tensors with other values, shapes or dtypes, with ||b - a|| / ||a||) and
// hands the per-module badges to the tree. A missing, corrupt or refused file is shown as text.
import { clear, h } from "../dom";
import type { DiffReply, DiffRequest } from "../protocol";
import type { Ctx, Pane } from "./context";
import { messageOf } from "./context";

/** "1.2e-3" style for small relative changes, fixed for the rest; "—" when there is none. */
export function relText(x: number | null): string {
  if (x === null || x === undefined) return "—";
  if (x === 0) return "0";
  return x < 1e-3 || x >= 1e4 ? x.toExponential(2) : x.toFixed(4);
}


export class DiffPane implements Pane {
  readonly el = h("div", { class: "tx-diffpane" });
  private readonly against = h("select", { "aria-label": "Compare with" },
    h("option", { value: "open" }, "the model when the explorer opened"),
    h("option", { value: "checkpoint" }, "a checkpoint file"));
  private readonly file = h("input", { type: "text", class: "tx-ckpt", placeholder: "path/to/model.safetensors (.pt, .bin)", "aria-label": "Checkpoint path" });
  private readonly go = h("button", { type: "button" }, "Compare");
  private readonly out = h("div", { class: "tx-diffout", "aria-live": "polite" });
  private seq = 0;

  constructor(
    private readonly ctx: Ctx,
    private readonly setBadges: (badges: Record<string, string>) => void,
  ) {
    this.go.addEventListener("click", () => void this.compare());
    this.file.addEventListener("keydown", (e) => {
      if (e.key === "Enter") void this.compare();
    });
    this.against.addEventListener("change", () => {
      this.file.hidden = this.against.value !== "checkpoint";
      if (this.against.value === "open") void this.compare();
    });
    this.file.hidden = true;
    this.el.append(h("div", { class: "tx-buttons" }, h("span", {}, "Compare the model now with "), this.against, this.file, this.go), this.out);
  }

  show(): Promise<void> | void {
    // Against the opened model the answer changes with every patch: ask again when shown. A
    // checkpoint is read only when asked (it may be large).
    if (this.against.value === "open") return this.compare();
  }

  async compare(): Promise<void> {
    if (this.ctx.readonly) {
      clear(this.out);
      this.out.appendChild(h("p", { class: "tx-muted" }, "read-only snapshot: no kernel to compare with"));
      return;
    }
    const seq = ++this.seq;
    let r: DiffReply;
    try {
      this.go.disabled = true;
      r = await this.ctx.rpc.call({ kind: "diff", against: this.against.value as DiffRequest["against"], file: this.file.value });
    } catch (e) {
      if (seq !== this.seq) return;
      clear(this.out);
      this.out.appendChild(h("p", { class: "tx-bad", role: "alert" }, messageOf(e)));
      this.setBadges({});
      return;
    } finally {
      this.go.disabled = false;
    }
    if (seq !== this.seq) return;
    this.setBadges(r.badges);
    this.render(r);
  }

  private render(r: DiffReply): void {
    clear(this.out);
    const counts = Object.entries(r.counts).map(([k, n]) => `${n} ${k}`).join(", ");
    this.out.appendChild(h("p", { class: "tx-diffsum" }, r.total ? `Against ${r.label}: ${counts}.` : `No difference from ${r.label}.`));
    if (!r.total) return;
    const table = h("table", { class: "tx-table tx-difftable" });
    table.appendChild(h("thead", {}, h("tr", {}, h("th", {}, "module / tensor"), h("th", {}, "change"), h("th", {}, "detail"), h("th", {}, "rel. change"))));
    const body = h("tbody");
    for (const row of r.rows) {
      const link = h("button", { type: "button", class: "tx-link", title: "Show in the tree" }, row.path);
      const target = row.module;
      if (target === null) link.disabled = true; // no longer in the model
      else link.addEventListener("click", () => this.ctx.select(target));
      body.appendChild(h("tr", { class: `tx-diff-${row.kind}` },
        h("td", {}, link),
        h("td", {}, h("span", { class: `tx-badge tx-badge-${row.kind}` }, row.kind)),
        h("td", { class: "tx-muted" }, row.detail),
        h("td", { class: "tx-num" }, relText(row.rel_change))));
    }
    table.appendChild(body);
    this.out.appendChild(table);
    if (r.total > r.rows.length) this.out.appendChild(h("p", { class: "tx-muted" }, `first ${r.rows.length} of ${r.total} shown`));
  }
}
