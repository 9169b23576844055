// What one tree row shows: its accessible name, and its cells (name, class, markers, last probe
// output shape, parameter count). Text only: module names come from the model.
import { formatCount, h } from "./dom";
import type { Item } from "./protocol";
import { isFold, isMore } from "./protocol";

const MARK_TEXT: Record<string, [string, string]> = {
  alias: ["alias", "the same module object is reachable under other paths"],
  hooks: ["hook", "has hooks registered"],
  fwd: ["fwd*", "forward is patched on this instance"],
  custom: ["custom", "a class defined outside torch"],
  patched: ["patched", "changed by a patch"],
  error: ["failed", "the last probe failed here"],
  param: ["param", "parametrized"],
  wrap: ["wrap", "wraps another module"],
};

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

/** The accessible name: it starts with the attribute name ("conv1 Conv2d"), as tests rely on. */
export function rowLabel(item: Item): string {
  if (isFold(item)) return `${lastName(item.first)}-${lastName(item.last)} ×${item.fold} ${item.cls}`;
  if (isMore(item)) return `${item.more} more`;
  return `${item.path === "" ? "(model)" : item.name} ${item.cls}`;
}

export function rowCells(item: Item): HTMLElement[] {
  if (isMore(item)) return [h("span", { class: "tx-muted" }, `… ${item.more} more (Enter to load)`)];
  if (isFold(item)) {
    return [
      h("span", { class: "tx-name" }, `${lastName(item.first)}–${lastName(item.last)}`),
      h("span", { class: "tx-fold" }, `×${item.fold}`),
      h("span", { class: "tx-cls" }, item.cls),
    ];
  }
  const cells = [
    h("span", { class: "tx-name" }, item.path === "" ? "(model)" : item.name),
    h("span", { class: "tx-cls" }, item.cls),
  ];
  for (const m of item.marks ?? []) {
    const [text, title] = MARK_TEXT[m] ?? [m, m];
    cells.push(h("span", { class: `tx-mark tx-mark-${m}`, title }, text));
  }
  cells.push(h("span", { class: "tx-spring" }));
  if (item.out) cells.push(h("span", { class: "tx-shape", title: "output shape (last probe)" }, item.out));
  cells.push(h("span", { class: "tx-params", title: `${item.params} parameters` }, formatCount(item.params)));
  return cells;
}
