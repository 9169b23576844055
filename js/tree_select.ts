// Multi-select in the tree: a checkbox per row, Shift+click for a range of the rows in
// view, "select all N matches" of the filter, and the bulk bar acting on the selection: freeze /
// unfreeze, replace all with a catalog class (a live count first; one undoable patch) and the PEFT
// target_modules with the LoRA parameters rank r adds. Also the rows' badges from other tools
// (Diff tab, non-finite weights), which tree.ts draws through `decorate`.
import { clear, formatCount, h } from "./dom";
import type { Ctx } from "./panes/context";
import { messageOf } from "./panes/context";
import type { BulkRequest, HealthReply, NodeRow } from "./protocol";
import { isFold, isMore } from "./protocol";
import type { TreeView } from "./tree";

const PICK_DEBOUNCE_MS = 250;
/** Badge text and tooltip per kind; "nan" comes from the health check, the rest from the Diff tab. */
export const BADGES: Record<string, [string, string]> = {
  added: ["added", "not in the model compared with"],
  retyped: ["retyped", "another class than in the model compared with"],
  changed: ["changed", "same class, other hyperparameters (extra_repr)"],
  shape: ["shape", "a weight of another shape"],
  dtype: ["dtype", "a weight of another dtype"],
  values: ["values", "weights hold other values"],
  missing: ["missing", "a weight the checkpoint lacks"],
  frozen: ["frozen", "its parameters were trainable when the explorer opened and are frozen now"],
  unfrozen: ["unfrozen", "its parameters were frozen when the explorer opened and are trainable now"],
  nan: ["NaN/Inf", "its own weights hold NaN or Inf"],
  nonfinite: ["NaN out", "the first module whose outputs hold NaN or Inf (last real probe)"],
  // the Ranks tab's plan (tx.explore(..., ranks=plan))
  sharded: ["sharded", "holds tensors sharded over the mesh (Ranks tab)"],
  comms: ["comms", "runs collectives in its own forward, backward or step (Ranks tab)"],
  // the Export tab's check, one target at a time
  "x-ok": ["✓", "export check: the target takes this module and everything below it"],
  "x-fails": ["✗", "export check: an op here or below fails the target (Export tab)"],
  "x-delegated": ["delegated", "ExecuTorch: all its ops delegated to XNNPACK"],
  "x-portable": ["portable", "ExecuTorch: its ops run on the portable kernels, none delegated"],
  "x-partly": ["partly", "ExecuTorch: some of its ops delegated to XNNPACK, some portable"],
  // the training lens (ex.watch): the flag that holds now, the worst first
  "first-nan": ["first NaN", "training: the first module whose forward or backward made NaN/Inf"],
  "t-nonfinite": ["NaN", "training: a sampled figure is NaN/Inf"],
  "t-exploding": ["exploding", "training: updates or gradients far too large for its weights"],
  "t-magnitude": ["magnitude", "training: its outputs grew ~200x over their first steps' size"],
  "t-dead": ["dead", "training: at least 95% of its outputs are 0"],
  "t-vanishing": ["vanishing", "training: its weights' gradients are ~0"],
  "t-saturated": ["saturated", "training: its outputs sit at the activation's bounds"],
};

/** The rows a Shift+click selects: node rows from `from` to `to` of the visible list, both included. */
export function rangePaths(rows: readonly { item: unknown }[], from: number, to: number): string[] {
  const [a, b] = from <= to ? [from, to] : [to, from];
  const out: string[] = [];
  for (let i = Math.max(0, a); i <= Math.min(rows.length - 1, b); i++) {
    const item = rows[i].item as NodeRow | null;
    if (item && !isFold(item) && !isMore(item)) out.push(item.path);
  }
  return out;
}

export class TreeSelect {
  readonly selected = new Set<string>();
  readonly el: HTMLElement;
  /** source ("diff", "health") -> path -> badge kind */
  readonly badges = new Map<string, Map<string, string>>();
  readonly probeNote = h("span", { class: "tx-bad tx-nonfinite", hidden: true });
  private anchor = -1;
  private matches: string[] = [];
  private pickSeq = 0;
  private pickTimer: ReturnType<typeof setTimeout> | undefined;
  private healthTimer: ReturnType<typeof setTimeout> | undefined;
  private healthKey = "";
  private readonly countEl = h("span", { class: "tx-count", "aria-live": "polite" });
  private readonly allBtn = h("button", { type: "button", class: "tx-link", hidden: true });
  private readonly tools = h("div", { class: "tx-bulktools" });
  private readonly buttons: HTMLButtonElement[];
  /** The open Replace or PEFT form's refresh: their counts follow the selection. */
  private onSelection: (() => void) | null = null;

  constructor(
    private readonly tree: TreeView,
    private readonly ctx: Ctx,
  ) {
    const btn = (label: string, title: string, fn: () => void) => {
      const b = h("button", { type: "button", title }, label);
      b.addEventListener("click", fn);
      return b;
    };
    const clearBtn = btn("Clear", "Untick every row", () => this.set([]));
    this.buttons = [
      btn("Freeze", "requires_grad=False for every parameter under the selection (one undoable patch)", () => void this.flags("freeze")),
      btn("Unfreeze", "requires_grad=True for every parameter under the selection", () => void this.flags("unfreeze")),
      btn("Replace…", "Replace all selected modules with one class", () => this.openReplace()),
      btn("PEFT…", "The target_modules naming exactly the selection, and its LoRA parameters", () => this.openPeft()),
      clearBtn,
    ];
    this.allBtn.addEventListener("click", () => this.set(this.matches));
    this.el = h("div", { class: "tx-selectbar" }, this.allBtn, h("span", { class: "tx-bulk" }, this.countEl, ...this.buttons), this.tools);
    // The filter bar is tree_filter.ts's: follow what is typed there to offer its matches.
    const filter = this.filterInputs();
    filter.input?.addEventListener("input", () => this.schedulePick());
    filter.regex?.addEventListener("change", () => this.schedulePick());
    filter.names?.addEventListener("change", () => this.schedulePick());
    // Scrolling shows other rows: check their weights too (capture: scroll does not bubble).
    tree.el.addEventListener("scroll", () => this.scheduleHealth(false), true);
    tree.el.insertBefore(this.el, tree.el.children[1] ?? null);
    this.sync();
  }

  private filterInputs(): { input: HTMLInputElement | null; regex: HTMLInputElement | null; names: HTMLInputElement | null } {
    return {
      input: this.tree.el.querySelector<HTMLInputElement>("input.tx-filter"),
      regex: this.tree.el.querySelector<HTMLInputElement>(".tx-regex:not(.tx-names) input"),
      names: this.tree.el.querySelector<HTMLInputElement>(".tx-names input"),
    };
  }

  set(paths: Iterable<string>): void {
    this.selected.clear();
    for (const p of paths) this.selected.add(p);
    this.sync();
    this.tree.render();
  }

  /** Adds the checkbox and badges to a node row; Shift+click on it selects a range. */
  decorate(el: HTMLElement, item: NodeRow, index: number): void {
    this.addBadges(el, item);
    if (this.ctx.readonly) return; // a snapshot has no kernel to act on a selection
    const box = h("input", { type: "checkbox", class: "tx-check", "aria-label": `select ${item.path || "(model)"}` });
    box.checked = this.selected.has(item.path);
    box.addEventListener("click", (e) => {
      e.stopPropagation();
      if (e.shiftKey && this.anchor >= 0) this.addRange(index);
      else this.toggle(item.path, box.checked);
      this.anchor = index;
    });
    el.addEventListener("click", (e) => {
      if (!e.shiftKey || this.ctx.readonly) return;
      e.stopImmediatePropagation(); // a range, not a new selected row
      if (this.anchor < 0) this.toggle(item.path, true);
      else this.addRange(index);
      this.anchor = index;
    });
    const caret = el.querySelector(".tx-caret");
    caret?.after(box);
    if (box.checked) el.classList.add("tx-checked");
  }

  private addBadges(el: HTMLElement, item: NodeRow): void {
    const spring = el.querySelector(".tx-spring");
    for (const [source, map] of this.badges) {
      const kind = map.get(item.path);
      if (!kind) continue;
      const [text, title] = BADGES[kind] ?? [kind, kind];
      const badge = h("span", { class: `tx-badge tx-badge-${kind}`, title, "data-source": source }, text);
      if (spring) spring.before(badge);
      else el.appendChild(badge);
    }
  }

  private toggle(path: string, on: boolean): void {
    if (on) this.selected.add(path);
    else this.selected.delete(path);
    this.sync();
    this.tree.render();
  }

  private addRange(index: number): void {
    for (const p of rangePaths(this.tree.visible, this.anchor, index)) this.selected.add(p);
    this.sync();
    this.tree.render();
  }

  setBadges(source: string, badges: Record<string, string>): void {
    this.badges.set(source, new Map(Object.entries(badges)));
    this.tree.render();
  }

  private sync(): void {
    const n = this.selected.size;
    this.countEl.textContent = n ? `${n} selected` : "";
    for (const b of this.buttons) b.hidden = n === 0;
    if (!n) {
      clear(this.tools);
      this.onSelection = null;
    } else this.onSelection?.();
  }

  private schedulePick(): void {
    clearTimeout(this.pickTimer);
    this.pickTimer = setTimeout(() => void this.pick(), PICK_DEBOUNCE_MS);
  }

  /** The model changed (a patch, an undo): the matches are asked for again, and the old ones
   * are not offered meanwhile ("Replace all" of the matched SiLUs leaves none to select). */
  treeChanged(): void {
    this.matches = [];
    this.allBtn.hidden = true;
    void this.pick();
  }

  /** Every match of the filter (it shows a page of them): offered as "select all N matches". */
  async pick(): Promise<void> {
    const { input, regex, names } = this.filterInputs();
    const query = input?.value.trim() ?? "";
    const seq = ++this.pickSeq;
    if (!query || this.ctx.readonly) {
      this.allBtn.hidden = true;
      return;
    }
    try {
      const r = await this.ctx.rpc.call({
        kind: "pick",
        query,
        regex: Boolean(regex?.checked),
        names: Boolean(names?.checked),
      });
      if (seq !== this.pickSeq) return;
      this.matches = r.paths;
      this.allBtn.textContent = `select all ${r.paths.length} match${r.paths.length === 1 ? "" : "es"}`;
      this.allBtn.hidden = r.paths.length === 0;
    } catch {
      if (seq === this.pickSeq) this.allBtn.hidden = true; // the filter bar says what is wrong
    }
  }

  private async flags(op: "freeze" | "unfreeze"): Promise<void> {
    const rev = this.ctx.model.get("tree_state")?.rev;
    await this.ctx.run("bulk", () => this.ctx.rpc.call({ kind: "bulk", op, paths: [...this.selected], rev }));
  }

  private openReplace(): void {
    clear(this.tools);
    this.onSelection = null;
    const input = h("input", { type: "search", class: "tx-bulkcls", placeholder: "class, e.g. SiLU", "aria-label": "Replace with class" });
    const list = h("datalist", { id: `tx-bulk-list-${Math.random().toString(36).slice(2, 8)}` });
    input.setAttribute("list", list.id);
    const prefill = h("input", { type: "checkbox" });
    const plan = h("p", { class: "tx-plan", "aria-live": "polite" });
    const apply = h("button", { type: "button", disabled: true }, "Replace all");
    const qualname = () => {
      const v = input.value.trim();
      const hit = [...list.options].find((o) => o.value === v || o.label === v);
      return hit ? hit.value : v;
    };
    let seq = 0;
    const refresh = async () => {
      const mine = ++seq;
      const v = input.value.trim();
      try {
        const cat = await this.ctx.rpc.call({ kind: "catalog", query: v });
        if (mine !== seq) return;
        clear(list);
        for (const e of cat.entries.slice(0, 50)) list.appendChild(h("option", { value: e.qualname, label: e.name }));
        const r = await this.ctx.rpc.call({ kind: "plan", paths: [...this.selected], cls: v ? qualname() : null });
        if (mine !== seq) return;
        plan.textContent = r.note;
        plan.classList.remove("tx-bad");
        apply.disabled = !v || r.count === 0;
        apply.textContent = `Replace all ${r.count}`;
      } catch (e) {
        if (mine !== seq) return;
        plan.textContent = messageOf(e);
        plan.classList.add("tx-bad");
        apply.disabled = true;
      }
    };
    input.addEventListener("input", () => void refresh());
    this.onSelection = () => void refresh();
    apply.addEventListener("click", async () => {
      const rev = this.ctx.model.get("tree_state")?.rev;
      const msg: BulkRequest = { kind: "bulk", op: "replace", paths: [...this.selected], cls: qualname(), prefill: prefill.checked, rev };
      const r = await this.ctx.run("bulk", () => this.ctx.rpc.call(msg));
      if (r) this.set([]);
    });
    this.tools.append(
      h("div", { class: "tx-bulkrow" }, input, list, apply),
      h("label", { class: "tx-muted" }, prefill, "build each from its module's values"),
      plan,
    );
    void refresh();
    input.focus();
  }

  private openPeft(): void {
    clear(this.tools);
    this.onSelection = null;
    const r = h("input", { type: "number", min: 1, value: 8, class: "tx-rank", "aria-label": "LoRA rank r" });
    const out = h("pre", { class: "tx-pre tx-peft" });
    const sum = h("p", { class: "tx-plan", "aria-live": "polite" });
    const copy = h("button", { type: "button" }, "Copy");
    copy.addEventListener("click", () => void navigator.clipboard?.writeText(out.textContent ?? "").catch(() => undefined));
    const refresh = async () => {
      try {
        const p = await this.ctx.rpc.call({ kind: "peft", paths: [...this.selected], r: Number(r.value) || 1 });
        out.textContent = `target_modules=${p.targets}`;
        const skipped = p.skipped.length ? `; ${p.skipped.length} selected module(s) are not Linear/Conv layers` : "";
        sum.textContent = `LoRA at r=${p.r} adds ${formatCount(p.lora_params)} parameters (${p.lora_params.toLocaleString()}) on ${p.layers.length} layer(s)${skipped}`;
        sum.classList.remove("tx-bad");
      } catch (e) {
        out.textContent = "";
        sum.textContent = messageOf(e);
        sum.classList.add("tx-bad");
      }
    };
    r.addEventListener("input", () => void refresh());
    this.onSelection = () => void refresh();
    this.tools.append(h("div", { class: "tx-bulkrow" }, h("label", {}, "rank r ", r), copy), out, sum);
    void refresh();
  }

  /** `force`: the model or probe changed, so rows already checked may have changed too. */
  scheduleHealth(force = true): void {
    if (force) this.healthKey = "";
    clearTimeout(this.healthTimer);
    this.healthTimer = setTimeout(() => void this.health(), 150);
  }

  /** Which rows in view own weights holding NaN or Inf, and the last real probe's first
   * non-finite module: marked like a failure (status text and a row badge). */
  async health(): Promise<void> {
    if (this.ctx.readonly) return;
    // Only the rows drawn (the viewport and its overscan): each check reads their weights.
    const drawn = [...this.tree.tree.children].map((el) => Number(el.id.slice(el.id.lastIndexOf("-") + 1)));
    const paths = drawn.length ? rangePaths(this.tree.visible, Math.min(...drawn), Math.max(...drawn)) : [];
    const key = paths.join("\n");
    if (key === this.healthKey) return;
    this.healthKey = key;
    let r: HealthReply;
    try {
      r = await this.ctx.rpc.call({ kind: "health", paths });
    } catch {
      return; // a closed explorer: nothing to mark
    }
    const marks: Record<string, string> = {};
    for (const p of r.nonfinite) marks[p] = "nan";
    if (r.probe_path !== null) marks[r.probe_path] = "nonfinite";
    this.probeNote.textContent = r.probe_note;
    this.probeNote.hidden = !r.probe_note;
    const old = this.badges.get("health");
    const same = old && old.size === Object.keys(marks).length && Object.entries(marks).every(([k, v]) => old.get(k) === v);
    if (!same) this.setBadges("health", marks);
  }

  dispose(): void {
    clearTimeout(this.pickTimer);
    clearTimeout(this.healthTimer);
  }
}
