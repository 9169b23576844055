// The module tree: lazy (children fetched on expand), virtualised (only the rows in view exist in the
// DOM) and folded runs of identical siblings. The filter bar is tree_filter.ts, the key map
// tree_keys.ts, a row's cells tree_row.ts. Mirrors src/torchxray/tree.py through serialize.py's rows.
import { clear, h, uid } from "./dom";
import type { FoldRow, Item, MoreRow, NodeRow, Page, TreeState } from "./protocol";
import { isFold, isMore } from "./protocol";
import { TreeFilter, type FilterResult } from "./tree_filter";
import { treeKey, type TreeNav } from "./tree_keys";
import { extents, reload, type TreeSource } from "./tree_pages";
import { fitNames, foldKey, itemKey, rowCells, rowHeader, rowLabel } from "./tree_row";

export { foldKey, rowLabel, type FilterResult, type TreeSource };

export const ROW_HEIGHT = 22;
/** Rows kept in the DOM at most, whatever the model size. */
export const MAX_DOM_ROWS = 200;
const OVERSCAN = 10;
const FALLBACK_VIEW_HEIGHT = 400;

interface VisibleRow {
  item: Item | null; // null: "loading" placeholder
  key: string;
  depth: number;
  list: string; // key of the page list holding the item (for "more" rows)
  posinset: number;
  setsize: number;
}

export class TreeView implements TreeNav {
  readonly el: HTMLElement;
  readonly tree: HTMLElement;
  private readonly viewport: HTMLElement;
  private readonly spacer: HTMLElement;
  readonly filter: TreeFilter; // its fold: the Compile tab's "fold the tree to breaking rows"
  private readonly idBase = uid("tree");
  private root: NodeRow | null = null;
  private lists = new Map<string, Item[]>();
  private expanded = new Set<string>();
  private loading = new Set<string>();
  private filtered: FilterResult | null = null;
  private generation = 0; // of the tree state (setState)
  visible: VisibleRow[] = [];
  selected = "";
  focus = 0;
  /** Adds cells and listeners of other tools (tree_select.ts) to a module row. */
  decorate?: (el: HTMLElement, item: NodeRow, index: number) => void;

  constructor(
    private readonly source: TreeSource,
    private readonly onSelect: (path: string) => void,
    private readonly onError: (message: string) => void,
  ) {
    this.filter = new TreeFilter(
      (query, regex, names) => this.source.filter(query, regex, names),
      (result) => this.showFiltered(result),
    );
    this.spacer = h("div", { class: "tx-spacer" });
    this.tree = h("div", { role: "tree", tabindex: 0, class: "tx-tree", "aria-label": "Modules" });
    this.viewport = h("div", { class: "tx-viewport" }, this.spacer);
    this.spacer.appendChild(this.tree);
    this.el = h("div", { class: "tx-treepane" }, this.filter.el, rowHeader(), this.viewport);
    this.viewport.addEventListener("scroll", () => this.render());
    // Modified keys are not the tree's: Shift+Enter runs the cell (keys.ts lets it through).
    this.tree.addEventListener("keydown", (e) => {
      if (!e.altKey && !e.ctrlKey && !e.metaKey && !e.shiftKey && treeKey(this, e.key)) e.preventDefault();
    });
  }

  /** New tree state (first load or after a patch): keep what the user expanded. Apply and Undo
   * send two in a row (the patch's, the probe's): the first's pages must not land in the second's
   * lists nor, refused as duplicates, close rows the person had opened. */
  async setState(state: TreeState): Promise<void> {
    const gen = ++this.generation;
    const first = this.root === null;
    const reached = extents(this.lists); // rows loaded with "more" are loaded again (tree_pages.ts)
    this.root = state.root;
    this.lists.clear();
    for (const [parent, page] of Object.entries(state.pages)) this.lists.set(parent, page.items.slice());
    if (first) this.expanded.add(state.root.path);
    // Re-fetch what was open and is not in the first page, so the view survives a patch; folds
    // after the lists that hold them.
    const missing = [...this.expanded].filter((k) => !this.lists.has(k));
    this.rebuild();
    await Promise.all(missing.filter((k) => !k.startsWith("fold:")).map((k) => this.load(k, true, gen)));
    for (const key of missing.filter((k) => k.startsWith("fold:"))) {
      if (gen !== this.generation) return;
      this.expanded.delete(key);
      const fold = [...this.lists.values()].flat().find((it) => isFold(it) && foldKey(it.parent, it.start) === key);
      if (fold) await this.expandFold(fold as FoldRow, gen);
    }
    if (gen !== this.generation) return;
    await reload(this.lists, reached, (m, limit) => this.fetch(m.parent, m.offset, limit, m.unfold, true, gen));
    if (gen !== this.generation) return;
    this.rebuild();
    if (this.filtered) await this.runFilter();
  }

  select(path: string, notify = false): void {
    this.selected = path;
    // The kernel answers a click on an alias row with the canonical path: keep the focus on the
    // alias row, or arrowing down onto it would jump back up (a keyboard trap).
    const cur = this.visible[this.focus]?.item;
    const onAlias = cur && !isFold(cur) && !isMore(cur) && cur.alias_of === path;
    const i = onAlias
      ? this.focus
      : this.visible.findIndex((r) => r.item && !isFold(r.item) && !isMore(r.item) && r.key === path);
    if (i >= 0) this.focus = i;
    this.render();
    if (i >= 0) this.scrollTo(i);
    if (notify) this.onSelect(path);
  }

  /** Expands the ancestors of `path` (loading pages and unfolding folds as needed), then selects it. */
  async reveal(path: string): Promise<void> {
    if (this.source.reveal && !this.visible.some((r) => r.key === path)) {
      try {
        const { chain } = await this.source.reveal(path);
        for (const { parent, index } of chain) {
          await this.expand(parent);
          const list = this.lists.get(parent) ?? [];
          const fold = list.find((it) => isFold(it) && index >= it.start && index < it.start + it.fold) as
            | FoldRow
            | undefined;
          if (fold) await this.expandFold(fold);
        }
      } catch (e) {
        this.onError(String((e as Error).message ?? e));
      }
    }
    this.select(path);
  }

  isExpanded = (key: string): boolean => this.expanded.has(key);

  async expand(key: string): Promise<void> {
    this.expanded.add(key);
    if (!this.lists.has(key)) await this.load(key, false);
    this.rebuild();
  }

  collapse(key: string): void {
    this.expanded.delete(key);
    this.rebuild();
  }

  async toggle(row: VisibleRow): Promise<void> {
    const item = row.item;
    if (!item) return;
    if (isMore(item)) return this.loadMore(row, item);
    if (isFold(item)) {
      if (this.expanded.has(row.key)) return this.collapse(row.key);
      return this.expandFold(item);
    }
    if (item.nkids === 0) return;
    if (this.filtered) return;
    if (this.expanded.has(row.key)) this.collapse(row.key);
    else await this.expand(row.key);
  }

  private async expandFold(fold: FoldRow, gen?: number): Promise<void> {
    const key = foldKey(fold.parent, fold.start);
    this.expanded.add(key);
    if (!this.lists.has(key)) {
      // The kernel sends the first page of the fold and a "more" row for the rest of it.
      const page = await this.fetch(fold.parent, fold.start, fold.fold, true, gen !== undefined, gen);
      if (gen !== undefined && gen !== this.generation) return;
      if (page) this.lists.set(key, page.items.slice());
      else this.expanded.delete(key); // no "loading" row left behind
    }
    this.rebuild();
  }

  private async loadMore(row: VisibleRow, more: MoreRow): Promise<void> {
    const page = await this.fetch(more.parent, more.offset, more.more, more.unfold);
    const list = this.lists.get(row.list);
    if (!page || !list) return;
    const at = list.findIndex((it) => isMore(it) && it.offset === more.offset);
    if (at >= 0) list.splice(at, 1, ...page.items);
    this.rebuild();
  }

  private async load(key: string, quiet: boolean, gen?: number): Promise<void> {
    const page = await this.fetch(key, 0, 0, false, quiet, gen);
    if (gen !== undefined && gen !== this.generation) return; // a newer state loads its own
    if (page) this.lists.set(key, page.items.slice());
    else this.expanded.delete(key);
  }

  /** A page of `parent`'s children; null on an error or a duplicate click. A state's own loads
   * (`gen`) are never refused as duplicates of another state's. */
  private async fetch(
    parent: string,
    offset: number,
    limit: number,
    unfold: boolean,
    quiet = false,
    gen?: number,
  ): Promise<Page | null> {
    const key = `${parent}|${offset}|${unfold}|${gen ?? ""}`;
    if (this.loading.has(key)) return null;
    this.loading.add(key);
    this.rebuild();
    try {
      return await this.source.children(parent, offset, limit, unfold);
    } catch (e) {
      if (!quiet) this.onError(String((e as Error).message ?? e));
      return null;
    } finally {
      this.loading.delete(key);
    }
  }

  // ---- filter ------------------------------------------------------------------------------

  runFilter(): Promise<void> {
    return this.filter.run();
  }

  setFilter(query: string, regex = false): Promise<void> {
    return this.filter.set(query, regex);
  }

  private async showFiltered(result: FilterResult | null): Promise<void> {
    this.filtered = result;
    this.tree.dataset.empty = result ? "no module matches the filter" : ""; // styles.css
    if (!result) {
      this.rebuild();
      if (this.selected) await this.reveal(this.selected);
      return;
    }
    this.focus = 0;
    this.rebuild();
  }

  // ---- flattening and rendering ------------------------------------------------------------

  rebuild(): void {
    const out: VisibleRow[] = [];
    if (this.filtered) {
      this.filtered.rows.forEach((r, i) =>
        out.push({ item: r, key: r.path, depth: r.depth ?? 0, list: "", posinset: i + 1, setsize: 1 }),
      );
    } else if (this.root) {
      out.push({ item: this.root, key: this.root.path, depth: 0, list: "", posinset: 1, setsize: 1 });
      if (this.expanded.has(this.root.path)) this.flatten(this.root.path, 1, out);
    }
    this.visible = out;
    if (this.focus >= out.length) this.focus = Math.max(0, out.length - 1);
    this.render();
  }

  private flatten(listKey: string, depth: number, out: VisibleRow[]): void {
    const items = this.lists.get(listKey);
    if (!items) {
      out.push({ item: null, key: `loading:${listKey}`, depth, list: listKey, posinset: 1, setsize: 1 });
      return;
    }
    items.forEach((item, i) => {
      const key = itemKey(item);
      out.push({ item, key, depth, list: listKey, posinset: i + 1, setsize: items.length });
      if (!this.expanded.has(key)) return;
      if (isFold(item)) this.flatten(key, depth, out);
      else if (!isMore(item) && item.nkids > 0) this.flatten(key, depth + 1, out);
    });
  }

  private viewHeight(): number {
    return this.viewport.clientHeight || FALLBACK_VIEW_HEIGHT;
  }

  render(): void {
    const n = this.visible.length;
    this.spacer.style.height = `${n * ROW_HEIGHT}px`;
    const top = this.viewport.scrollTop;
    const first = Math.max(0, Math.floor(top / ROW_HEIGHT) - OVERSCAN);
    const count = Math.min(MAX_DOM_ROWS, Math.ceil(this.viewHeight() / ROW_HEIGHT) + 2 * OVERSCAN);
    const last = Math.min(n, first + count);
    clear(this.tree);
    for (let i = first; i < last; i++) this.tree.appendChild(this.renderRow(this.visible[i], i));
    const active = this.visible[this.focus];
    if (active && this.focus >= first && this.focus < last) {
      this.tree.setAttribute("aria-activedescendant", `${this.idBase}-${this.focus}`);
    } else this.tree.removeAttribute("aria-activedescendant");
    fitNames(this.el, this.tree);
  }

  private renderRow(row: VisibleRow, index: number): HTMLElement {
    const item = row.item;
    const el = h("div", {
      class: "tx-row",
      id: `${this.idBase}-${index}`,
      role: "treeitem",
      "aria-level": row.depth + 1,
      "aria-posinset": row.posinset,
      "aria-setsize": row.setsize,
    });
    el.style.transform = `translateY(${index * ROW_HEIGHT}px)`;
    el.style.paddingLeft = `${row.depth * 14 + 4}px`;
    if (index === this.focus) el.classList.add("tx-focus");
    if (!item) {
      el.setAttribute("aria-label", "loading");
      el.appendChild(h("span", { class: "tx-muted" }, "loading…"));
      return el;
    }
    el.setAttribute("aria-label", rowLabel(item));
    const expandable = this.expandable(index);
    // In filter results a row is open when the rows below it are its descendants.
    const open = this.filtered
      ? (this.visible[index + 1]?.depth ?? -1) > row.depth
      : this.expanded.has(row.key);
    if (expandable) el.setAttribute("aria-expanded", String(open));
    const caret = h("span", { class: "tx-caret", "aria-hidden": "true" }, expandable ? (open ? "▾" : "▸") : "");
    caret.addEventListener("click", (e) => {
      e.stopPropagation();
      this.focus = index;
      void this.toggle(row);
    });
    el.appendChild(caret);
    if (isMore(item)) el.classList.add("tx-more");
    else if (isFold(item)) el.classList.add("tx-foldrow");
    else {
      const selected = item.path === this.selected;
      el.setAttribute("aria-selected", String(selected));
      if (selected) el.classList.add("tx-selected");
      if (item.match) el.classList.add("tx-match");
    }
    el.append(...rowCells(item));
    if (!isMore(item) && !isFold(item)) this.decorate?.(el, item, index);
    el.addEventListener("click", () => this.activate(index, false));
    el.addEventListener("dblclick", () => void this.toggle(row));
    return el;
  }

  /** Click or Enter on a row: select it; open it if closed (Enter also closes). */
  activate(index: number, fromKey: boolean): void {
    const row = this.visible[index];
    if (!row?.item) return;
    this.focus = index;
    const item = row.item;
    if (isMore(item) || isFold(item)) {
      void this.toggle(row);
      return;
    }
    if (item.path !== this.selected) this.select(item.path, true);
    else this.render();
    if (this.filtered) return;
    if (item.nkids > 0 && (fromKey || !this.expanded.has(row.key))) void this.toggle(row);
  }

  private scrollTo(index: number): void {
    const top = index * ROW_HEIGHT;
    const vp = this.viewport;
    if (top < vp.scrollTop) vp.scrollTop = top;
    else if (top + ROW_HEIGHT > vp.scrollTop + this.viewHeight()) vp.scrollTop = top + ROW_HEIGHT - this.viewHeight();
    this.render();
  }

  // ---- keyboard (tree_keys.ts) ---------------------------------------------------------------

  get rowCount(): number { return this.visible.length; } // prettier-ignore
  get filtering(): boolean { return this.filtered !== null; } // prettier-ignore
  pageRows(): number {
    return Math.floor(this.viewHeight() / ROW_HEIGHT);
  }

  expandable(index: number): boolean {
    const item = this.visible[index]?.item;
    if (!item) return false;
    return isFold(item) || (!isMore(item) && item.nkids > 0);
  }

  isOpen(index: number): boolean {
    const row = this.visible[index];
    return Boolean(row) && this.expanded.has(row.key);
  }

  open(index: number): void {
    const row = this.visible[index];
    if (row) void this.toggle(row);
  }

  close(index: number): void {
    const row = this.visible[index];
    if (row) this.collapse(row.key);
  }

  moveFocus(index: number): void {
    if (!this.visible.length) return;
    this.focus = Math.max(0, Math.min(this.visible.length - 1, index));
    const item = this.visible[this.focus].item;
    if (item && !isFold(item) && !isMore(item) && item.path !== this.selected) this.select(item.path, true);
    this.scrollTo(this.focus);
  }

  parentIndex(index: number): number {
    const depth = this.visible[index]?.depth ?? 0;
    for (let i = index - 1; i >= 0; i--) if (this.visible[i].depth < depth) return i;
    return index;
  }
}
