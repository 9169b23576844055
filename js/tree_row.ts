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
    cells.push(h("span", { class: "tx-shape", title }, item.out ?? ""));
  }
  // An outline (TreeState.outline) has no counts yet: the kernel is still reading the tensors.
  if (item.params === undefined) cells.push(h("span", { class: "tx-params", title: "parameters: still being counted" }, "…"));
  else cells.push(h("span", { class: "tx-params", title: `${item.params} parameters` }, formatCount(item.params)));
  return cells;
}

/** Widens the tree pane (up to MAX_PANE of the widget) until no shown row is cut short: names
 * are what a person reads the tree by. Stops once the person has sized it by hand. */
export function fitNames(pane: HTMLElement, rows: HTMLElement): void {
  const auto = pane.dataset.autoWidth ?? "";
  if (pane.style.width !== auto) return; // the CSS resize handle set a width of its own
  // What the widest row lacks to show its name and class whole (those shrink, in that order from
  // last to first, when the row is short: styles.css). Not the output: a model returning ten
  // tensors would take the panes' room (the tabs wrapped); the row shows the first and a count,
  // its tooltip all of them.
  let need = 0;
  for (const row of rows.children) {
    let lack = 0;
    for (const cell of row.querySelectorAll<HTMLElement>(".tx-name, .tx-cls")) lack += cell.scrollWidth - cell.clientWidth;
    need = Math.max(need, lack);
  }
  if (need <= 0) return;
  const width = pane.getBoundingClientRect().width;
  const room = (pane.parentElement?.getBoundingClientRect().width ?? 0) * MAX_PANE;
  const next = Math.min(room, width + need + 2);
  if (next <= width + 1) return;
  pane.style.width = `${Math.round(next)}px`;
  pane.dataset.autoWidth = pane.style.width;
}
