// The Ranks tab: a plan from tx.ranks (the `ranks_state` traitlet, src/torchxray/_view/ranks_view.py)
// as one rank sees it. A rank selector (kept in the widget: its keys never reach the notebook);
// each module's tensors with their placement and local shape on that rank (uneven shards named),
// the collectives it runs (phase, op, count, bytes); every rank's memory in the step and whether
// it fits a budget per rank. The rows come from the kernel per rank (`ranks` request). After
// Apply or Undo the plan is stale: said first, with "Plan again" where the kernel can. Text only.
import { clear, formatBytes, h, uid } from "../dom";
import type { RankComm, RankMemoryRow, RankRow, RankTensor, RanksState } from "../protocol";
import type { Ctx, Pane } from "./context";
import { fitText, parseSize } from "./memory";

/** Rows drawn at first; the rest on "show all". */
export const FIRST_ROWS = 200;

/** "3×16"; a scalar "()". */
export function shapeText(shape: readonly number[]): string {
  return shape.length ? shape.join("×") : "()";
}

/** "dp=2 × tp=2". */
export function meshText(s: Partial<RanksState>): string {
  return (s.mesh ?? []).map((d) => `${d.name}=${d.size}`).join(" × ");
}

/** "forward all_gather ×1 on dp: 816 B". */
export function commText(c: RankComm): string {
  return `${c.phase} ${c.op} ×${c.count}${c.mesh_dim ? ` on ${c.mesh_dim}` : ""}: ${formatBytes(c.bytes)}`;
}

/** "uneven: 3×16 on ranks 0-2, 1×16 on rank 3". */
export function spreadText(t: RankTensor): string {
  const part = ([shape, ranks]: [number[], string]) => `${shapeText(shape)} on rank${/[-,]/.test(ranks) ? "s" : ""} ${ranks}`;
  return `uneven: ${t.spread.map(part).join(", ")}`;
}

/** The headline: what the plan is. */
export function headline(s: Partial<RanksState>): string {
  if (s.status !== "ok") return "No plan shown.";
  const n = s.world_size ?? 0;
  return `${n} rank${n === 1 ? "" : "s"} over mesh ${meshText(s)}: ${s.shown} of ${s.modules} modules hold tensors or run collectives.`;
}

const NO_PLAN =
  "Plan a sharding with tx.ranks(model, parallelize, mesh={...}, args=(x,)), then show it here: tx.explore(model, x, ranks=plan), or ex.ranks(plan) on this explorer.";

export class RanksPane implements Pane {
  readonly el = h("div", { class: "tx-ranks" });
  private readonly rankInput = h("input", { type: "number", min: 0, step: 1, value: "0", id: uid("rank"), class: "tx-rankpick" });
  private readonly rankOf = h("span", { class: "tx-muted" });
  private readonly order = h("select", { "aria-label": "order of the rows" }, h("option", { value: "tree" }, "model order"), h("option", { value: "bytes" }, "most bytes on this rank first"));
  private readonly budgetInput = h("input", { type: "text", "aria-label": "budget per rank", placeholder: "e.g. 80 GB", size: 10 });
  private readonly head = h("div", { class: "tx-rhead", "aria-live": "polite" });
  private readonly memory = h("section", { class: "tx-rmemory", "aria-label": "memory per rank" });
  private readonly rows = h("section", { class: "tx-rrows", "aria-label": "modules on this rank" });
  private readonly controls: HTMLElement;
  private rank = 0;
  private all = false;
  private seq = 0;
  private shown = ""; // the rows drawn: plan rev, rank, order
  private typedBudget = false;
  private replanning = false;
  private lastSelected = "";

  constructor(private readonly ctx: Ctx) {
    this.rankInput.setAttribute("aria-label", "rank");
    this.rankInput.addEventListener("input", () => this.pickRank(this.rankInput.value));
    this.order.addEventListener("change", () => void this.show());
    this.budgetInput.addEventListener("input", () => {
      this.typedBudget = true;
      this.drawMemory();
    });
    this.controls = h(
      "div",
      { class: "tx-rcontrols" },
      h("label", { for: this.rankInput.id }, "rank "),
      this.rankInput,
      " ",
      this.rankOf,
      h("label", {}, " rows: ", this.order),
    );
    this.el.append(this.head, this.controls, this.memory, this.rows);
  }

  private state(): Partial<RanksState> {
    return (this.ctx.model.get("ranks_state") as Partial<RanksState> | undefined) ?? {};
  }

  /** The rank the selector names (tests, and the memory table's rank buttons). */
  get current(): number {
    return this.rank;
  }

  pickRank(text: string | number): void {
    const n = Number(text);
    const w = this.state().world_size ?? 0;
    if (!Number.isInteger(n) || n < 0 || n >= w) {
      this.rankInput.setCustomValidity(`a rank from 0 to ${w - 1}`);
      this.rankOf.textContent = `of ${w}: type a rank from 0 to ${w - 1}`;
      return;
    }
    this.rankInput.setCustomValidity("");
    this.rank = n;
    if (String(this.rankInput.value) !== String(n)) this.rankInput.value = String(n);
    void this.show();
  }

  async show(): Promise<void> {
    const s = this.state();
    clear(this.head);
    this.controls.hidden = s.status !== "ok";
    if (s.status !== "ok") {
      clear(this.memory);
      clear(this.rows);
      this.shown = "";
      this.head.append(h("p", { class: "tx-rverdict" }, headline(s)), h("p", { class: "tx-muted" }, NO_PLAN));
      return;
    }
    const w = s.world_size ?? 0;
    if (this.rank >= w) this.rank = 0;
    this.rankInput.max = String(Math.max(0, w - 1));
    if (this.rankInput.validity.valid || document.activeElement !== this.rankInput) this.rankInput.value = String(this.rank);
    this.rankOf.textContent = `of ${w} (0 to ${w - 1})`;
    this.rankInput.disabled = this.order.disabled = false;
    this.head.appendChild(h("p", { class: "tx-rverdict" }, headline(s)));
    if (s.stale) this.head.appendChild(this.staleNote(s));
    if (s.error) this.head.appendChild(h("p", { class: "tx-bad tx-rerror" }, s.error));
    if (s.missing) this.head.appendChild(h("p", { class: "tx-bad" }, `${s.missing} of the plan's modules are not in this model: was it planned on another model?`));
    if (!s.stepped) this.head.appendChild(h("p", { class: "tx-muted" }, "Planned without a training step (step=False): no collectives and no memory."));
    for (const n of s.notes ?? []) this.head.appendChild(h("p", { class: "tx-muted tx-rnote" }, n));
    if (!this.typedBudget) this.budgetInput.value = s.budget ? formatBytes(s.budget) : "";
    this.drawMemory();
    await this.loadRows(s);
  }

  private staleNote(s: Partial<RanksState>): HTMLElement {
    const box = h(
      "div",
      { class: "tx-rstale", role: "status" },
      h("strong", {}, "Stale: "),
      "the model changed since this plan was made (Apply, Undo or Redo); the shards, collectives and memory below are the model's as it was. ",
    );
    if (s.can_replan && !this.ctx.readonly) {
      const again = h("button", { type: "button", class: "tx-primary" }, this.replanning ? "Planning…" : "Plan again");
      again.disabled = this.replanning;
      again.addEventListener("click", () => void this.replan());
      box.appendChild(again);
    } else box.appendChild(document.createTextNode(s.replan_note ?? ""));
    return box;
  }

  /** "Plan again": the same function, mesh and inputs on the model as it is now. */
  async replan(): Promise<void> {
    if (this.replanning || this.ctx.readonly) return;
    this.replanning = true;
    void this.show();
    await this.ctx.run("planning the ranks again", () => this.ctx.rpc.call({ kind: "ranks_plan" }));
    this.replanning = false;
    void this.show();
  }

  private budget(): { bytes: number | null; error: string } {
    const text = this.budgetInput.value;
    if (!text.trim()) return { bytes: null, error: "" };
    try {
      return { bytes: parseSize(text), error: "" };
    } catch (e) {
      return { bytes: null, error: e instanceof Error ? e.message : String(e) };
    }
  }

  private drawMemory(): void {
    const s = this.state();
    clear(this.memory);
    if (s.status !== "ok") return;
    const mem = s.memory ?? [];
    const { bytes, error } = this.budget();
    const budgetRow = h("div", { class: "tx-rbudget" }, h("label", {}, "budget per rank ", this.budgetInput));
    if (error) budgetRow.appendChild(h("span", { class: "tx-bad" }, ` ${error}`));
    this.memory.appendChild(h("h4", {}, "Memory per rank in one training step"));
    if (!mem.length) {
      this.memory.appendChild(h("p", { class: "tx-muted" }, "Not known: the plan ran no training step, or could not measure it (see its notes)."));
      return;
    }
    if (bytes !== null) {
      const over = mem.filter((m) => m.peak > bytes);
      const verdict = over.length
        ? `${over.length} of ${mem.length} ranks do not fit ${formatBytes(bytes)} (rank ${over[0].rank} needs ${formatBytes(over[0].peak)})`
        : `every rank fits ${formatBytes(bytes)}`;
      budgetRow.appendChild(h("span", { class: over.length ? "tx-nofit tx-rfit" : "tx-fit tx-rfit" }, ` ${verdict}`));
    }
    this.memory.appendChild(budgetRow);
    const cols = ["rank", "params", "grads", "optimizer", "activations", "peak", ...(bytes !== null ? ["budget"] : [])];
    const table = h("table", { class: "tx-rmem" }, h("thead", {}, h("tr", {}, ...cols.map((c) => h("th", { scope: "col" }, c)))));
    const body = h("tbody");
    for (const m of mem) body.appendChild(this.memRow(m, bytes));
    table.appendChild(body);
    this.memory.appendChild(table);
  }

  private memRow(m: RankMemoryRow, budget: number | null): HTMLElement {
    const pick = h("button", { type: "button", class: "tx-link", title: `show rank ${m.rank}'s shards` }, String(m.rank));
    pick.addEventListener("click", () => this.pickRank(m.rank));
    const cells = [m.params + m.buffers, m.grads, m.optimizer, m.activations, m.peak].map((v) => h("td", {}, formatBytes(v)));
    const tr = h("tr", { class: m.rank === this.rank ? "tx-rcur" : "" }, h("td", {}, pick), ...cells);
    if (m.rank === this.rank) tr.setAttribute("aria-current", "true");
    if (budget !== null) {
      const [ok, text] = fitText(m.peak, budget);
      tr.appendChild(h("td", { class: ok ? "tx-fit" : "tx-nofit" }, text));
    }
    return tr;
  }

  private async loadRows(s: Partial<RanksState>): Promise<void> {
    const key = `${s.rev}:${this.rank}:${this.order.value}:${this.all}`;
    if (key === this.shown) return this.markSelected();
    if (this.ctx.readonly) {
      clear(this.rows);
      this.rows.appendChild(h("p", { class: "tx-muted" }, "Each rank's shards need a kernel: this is a read-only snapshot."));
      return;
    }
    const seq = ++this.seq;
    const rank = this.rank;
    this.rows.setAttribute("aria-busy", "true");
    const reply = await this.ctx.run("ranks", () => this.ctx.rpc.call({ kind: "ranks", rank, order: this.order.value as "tree" | "bytes" }));
    if (seq !== this.seq) return; // another rank or order answers instead
    this.rows.removeAttribute("aria-busy");
    clear(this.rows);
    if (!reply) {
      this.shown = "";
      this.rows.appendChild(h("p", { class: "tx-muted" }, "No rows: see the message above."));
      return;
    }
    this.shown = key;
    this.drawRows(reply.rows, rank);
  }

  private drawRows(rows: RankRow[], rank: number): void {
    this.rows.appendChild(h("h4", {}, `What rank ${rank} holds and sends`));
    const cols = ["module", "tensor", "placement", `shape on rank ${rank}`, "global shape", "bytes"];
    const table = h("table", { class: "tx-rtable" }, h("thead", {}, h("tr", {}, ...cols.map((c) => h("th", { scope: "col" }, c)))));
    const drawn = this.all ? rows : rows.slice(0, FIRST_ROWS);
    for (const r of drawn) table.appendChild(this.moduleBody(r));
    this.rows.appendChild(table);
    if (drawn.length < rows.length) {
      const more = h("button", { type: "button", class: "tx-link" }, `show all ${rows.length} modules`);
      more.addEventListener("click", () => {
        this.all = true;
        void this.show();
      });
      this.rows.appendChild(more);
    }
    this.markSelected();
  }

  private moduleBody(r: RankRow): HTMLElement {
    const body = h("tbody", { class: "tx-rmod", "data-path": r.path });
    const link = h("button", { type: "button", class: "tx-link tx-rmodule", title: `select ${r.path || "the model"} in the tree` }, `${r.path || "(model)"} (${r.cls})`);
    link.addEventListener("click", () => this.ctx.select(r.path));
    const first = h("td", { class: "tx-rname" }, link);
    if (!r.tensors.length) body.appendChild(h("tr", {}, first, h("td", { colspan: 5, class: "tx-muted" }, "no tensors of its own")));
    r.tensors.forEach((t, i) => {
      const shape = h("td", { class: "tx-rshape" }, shapeText(t.shape));
      if (t.spread.length) shape.appendChild(h("span", { class: "tx-runeven", title: spreadText(t) }, " uneven"));
      const place = h("td", { class: t.sharded ? "tx-rsharded" : "" }, t.placement, t.mesh_dims.length ? h("span", { class: "tx-muted" }, ` on ${t.mesh_dims.join(", ")}`) : "");
      const tr = h("tr", { class: "tx-rtensor" }, i === 0 ? first : h("td"), h("td", {}, t.name), place, shape, h("td", {}, shapeText(t.global_shape)), h("td", {}, formatBytes(t.bytes)));
      body.appendChild(tr);
      if (t.spread.length) body.appendChild(h("tr", { class: "tx-rspread" }, h("td"), h("td", { colspan: 5, class: "tx-muted" }, `${t.name} ${spreadText(t)}`)));
    });
    for (const c of r.comms) body.appendChild(h("tr", { class: "tx-rcomm" }, h("td"), h("td", { colspan: 5 }, commText(c))));
    return body;
  }

  /** The selected module's rows stand out, brought into view when the selection moves. */
  private markSelected(): void {
    const sel = String(this.ctx.model.get("selected") ?? "");
    for (const b of this.rows.querySelectorAll<HTMLElement>(".tx-rmod")) {
      const on = b.dataset.path === sel;
      b.classList.toggle("tx-rsel", on);
      if (on && sel !== this.lastSelected) b.scrollIntoView?.({ block: "nearest" });
    }
    this.lastSelected = sel;
  }
}

/** The tree's badges from the plan shown (none while it is stale): rows that hold sharded tensors
 * ("rank-shard") and rows that run collectives ("rank-comm"), through `set` (TreeSelect.setBadges). */
export function showRankBadges(s: Partial<RanksState>, set: (source: string, badges: Record<string, string>) => void): void {
  const badges = (paths: readonly string[] | undefined, kind: string) => Object.fromEntries((paths ?? []).map((p) => [p, kind]));
  set("rank-shard", badges(s.sharded, "sharded"));
  set("rank-comm", badges(s.comms, "comms"));
}
