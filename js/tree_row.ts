// What one tree row shows: its accessible name, and its cells (name, class, markers, last probe
// output shape, parameter count), under a header naming the columns. Text only: module names come
// from the model.
import { formatCount, h } from "./dom";
import type { Item, Mark } from "./protocol";
import { isFold, isMore } from "./protocol";

const MARK_TEXT: Record<Mark, [string, string]> = {
  alias: ["alias", "the same module object is reachable under other paths"],
  hooks: ["hook", "has hooks registered"],
  fwd: ["fwd*", "forward is patched on this instance"],
  custom: ["custom", "a class defined outside torch"],
  patched: ["patched", "changed by a patch"],
  error: ["failed", "the last probe failed here"],
  inside_error: ["fails inside", "the last probe failed in a module under this one (click the red status to go there)"],
  frozen: ["frozen", "every parameter here has requires_grad=False"],
  param: ["param", "parametrized"],
  wrap: ["wrap", "wraps another module"],
  contract: ["contract", "forward's annotations disagree with what the probe saw (see Overview)"],
  break: ["breaks", "torch.compile graph-breaks in its own forward (Compile tab)"],
};

/** A placement badge's text: "offloaded: disk" (the title keeps "(runs on cpu)"), "DTensor
 * Shard(0)" (the title keeps the mesh and FSDP unit), "mixed" for several. */
export function placeShort(p: string): string {
  if (p.includes(";")) return "mixed";
  return p.replace(/ \(runs on [^)]*\)/, "").replace(/ on mesh .*/, "");
}

/** The share of the widget's width the tree may take to show its names whole. */
const MAX_PANE = 0.55;

export function foldKey(parent: string, start: number): string {
  return `fold:${parent}:${start}`;
}

export function itemKey(item: Item): string {
  if (isFold(item)) return foldKey(item.parent, item.start);
  if (isMore(item)) return `more:${item.parent}:${item.offset}:${item.unfold}`;
  return item.path;
}

function lastName(path: string): string {
  const i = path.lastIndexOf(".");
  return i < 0 ? path : path.slice(i + 1);
}

/** What the row's "writes" badge names: its forward's writes in the last probe, "writes
 * self.seen, self.calls" (the kernel sends one label each, "writes self.seen"). */
export function writesText(labels: readonly string[]): string {
  return `writes ${labels.map((l) => l.replace(/^writes /, "")).join(", ")}`;
}

/** The accessible name: it starts with the attribute name ("conv1 Conv2d"), as tests rely on;
 * then what its forward writes, if the last probe saw it write ("seen Counting, writes self.seen"). */
export function rowLabel(item: Item): string {
  if (isFold(item)) return `${lastName(item.first)}-${lastName(item.last)} ×${item.fold} ${item.cls}`;
  if (isMore(item)) return `${item.more} more`;
  const name = `${item.path === "" ? "(model)" : item.name} ${item.cls}`;
  return item.writes?.length ? `${name}, ${writesText(item.writes)}` : name;
}

/** The column names above the rows; the cells line up with `rowCells` through shared classes. */
export function rowHeader(): HTMLElement {
  return h(
    "div",
    { class: "tx-treehead", "aria-hidden": "true" },
    h("span", { class: "tx-caret" }),
    h("span", {}, "module · class"),
    h("span", { class: "tx-spring" }),
    h("span", { class: "tx-shape" }, "output shape"),
    h("span", { class: "tx-params" }, "params"),
  );
}

/** A row's output, "last_hidden_state: 1×16×128 +1", as its name ("last_hidden_state:") and
 * its shape with the count of the others ("1×16×128 +1"); a bare shape has no name. */
export function splitOut(out: string): { name: string; dims: string } {
  const at = out.lastIndexOf(": ");
  return at < 0 ? { name: "", dims: out } : { name: out.slice(0, at + 1), dims: out.slice(at + 2) };
}

export function rowCells(item: Item): HTMLElement[] {
  if (isMore(item)) return [h("span", { class: "tx-muted" }, `… ${item.more} more (Enter to load)`)];
  if (isFold(item)) {
    return [
      h("span", { class: "tx-name", title: `${item.first} – ${item.last}` }, `${lastName(item.first)}–${lastName(item.last)}`),
      h("span", { class: "tx-fold" }, `×${item.fold}`),
      h("span", { class: "tx-cls", title: item.cls }, item.cls),
    ];
  }
  // The title gives the whole path where a narrow pane has to cut the name short.
  const cells = [
    h("span", { class: "tx-name", title: item.path === "" ? "(model)" : item.path }, item.path === "" ? "(model)" : item.name),
    h("span", { class: "tx-cls", title: item.cls }, item.cls),
  ];
  for (const m of item.marks ?? []) {
    const [text, title] = MARK_TEXT[m] ?? [m, m];
    cells.push(h("span", { class: `tx-mark tx-mark-${m}`, title }, text));
  }
  if (item.writes?.length) {
    // The probe put them back; torch.compile has to handle them too (the Overview lists each).
    const title = `${writesText(item.writes)} (last probe; put back after it)`;
    cells.push(h("span", { class: "tx-mark tx-mark-writes", title }, "writes"));
  }
  if (item.placement) cells.push(h("span", { class: "tx-mark tx-mark-place", title: `placement: ${item.placement}` }, placeShort(item.placement)));
  cells.push(h("span", { class: "tx-spring" }));
  if (item.not_called && !item.out) cells.push(h("span", { class: "tx-shape tx-notcalled", title: `not called in the last probe: ${item.not_called}` }, "not called"));
  else {
    const title = item.out_all ? `outputs (last probe):\n${item.out_all}` : item.out ? `output shape (last probe): ${item.out}` : undefined;
    // The output's name gives way first (styles.css), its numbers never: "1×16×12…" misleads.
    const { name, dims } = splitOut(item.out ?? "");
    if (name) cells.push(h("span", { class: "tx-shape-name", title }, name));
    cells.push(h("span", { class: "tx-shape tx-shape-dims", title }, dims));
  }
  // An outline (TreeState.outline) has no counts yet: the kernel is still reading the tensors.
  if (item.params === undefined) cells.push(h("span", { class: "tx-params", title: "parameters: still being counted" }, "…"));
  else cells.push(h("span", { class: "tx-params", title: `${item.params} parameters` }, formatCount(item.params)));
  return cells;
}

/** Widens the tree pane (up to MAX_PANE of the widget) until no shown row is cut short: names
 * are what a person reads the tree by. Stops once the person has sized it by hand. Passing
 * badges do not count: an Apply adds "patched" to a row, and the panes must not change width
 * under the person's pointer then (issue 43); a row still short of room drops its shape (the
 * tooltip keeps it) rather than cut its class ("LlamaMo…" names no class). */
export function fitNames(pane: HTMLElement, rows: HTMLElement): void {
  const auto = pane.dataset.autoWidth ?? "";
  const byHand = pane.style.width !== auto; // the CSS resize handle set a width of its own
  // What the widest row lacks to show its name and class whole (those shrink, in that order from
  // last to first, when the row is short: styles.css). Not the output: a model returning ten
  // tensors would take the panes' room (the tabs wrapped); the row shows the first and a count,
  // its tooltip all of them.
  let need = 0;
  for (const row of rows.children) {
    need = Math.max(need, lack(row) - marksWidth(row));
  }
  const width = pane.getBoundingClientRect().width;
  const room = (pane.parentElement?.getBoundingClientRect().width ?? 0) * MAX_PANE;
  const next = Math.min(room, width + need + 2);
  if (!byHand && need > 0 && next > width + 1) {
    pane.style.width = `${Math.round(next)}px`;
    pane.dataset.autoWidth = pane.style.width;
  }
  for (const row of rows.children) {
    // An output's name shows whole or not at all ("[…" names nothing); so does its shape.
    const name = row.querySelector<HTMLElement>(".tx-shape-name");
    if (name && overflow(name) > 0) name.classList.add("tx-gone");
    if (lack(row) <= 0) continue;
    for (const shape of row.querySelectorAll<HTMLElement>(".tx-shape-name, .tx-shape-dims")) shape.classList.add("tx-gone");
  }
}

/** How much wider a cell's text is than its box, in fractions of a pixel (scrollWidth rounds,
 * and a cut of 0.4 px shows "…"). */
function overflow(cell: HTMLElement): number {
  const range = document.createRange();
  range.selectNodeContents(cell);
  const over = range.getBoundingClientRect().width - cell.getBoundingClientRect().width;
  return over > 0.01 ? over : 0;
}

/** How many pixels a row's name and class lack to be shown whole. */
function lack(row: Element): number {
  let n = 0;
  for (const cell of row.querySelectorAll<HTMLElement>(".tx-name, .tx-cls")) n += overflow(cell);
  return n;
}

/** Badges that come and go as the person works (a patch, a probe, a watch's hooks, a freeze):
 * the room they take must not move the panes. What the model is (custom, alias...) does count. */
const PASSING = [...(["patched", "error", "inside_error", "contract", "frozen", "hooks"] as const).map((m) => `.tx-mark-${m}`), ".tx-mark-writes"].join(", ");

function marksWidth(row: Element): number {
  let n = 0;
  for (const mark of row.querySelectorAll<HTMLElement>(PASSING)) n += mark.getBoundingClientRect().width + 6; // + the row's gap
  return n;
}
