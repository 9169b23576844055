// The tree's filter bar: a substring (or regex) query answered by the kernel, debounced while the
// person types; an answer to an older query is dropped, and the count of matches is announced.
// A fold (the Compile tab's "fold to breaking rows") stands in for an empty query: its rows are
// asked for again whenever the filter runs (after a patch too), and "show all" ends it.
import { h } from "./dom";
import type { FilterResult } from "./protocol";

export type { FilterResult };

/** The tree folded to some rows and their ancestors while the query is empty. */
export interface TreeFold {
  /** "breaking rows": the count says "2 breaking rows". */
  label: string;
  rows(): Promise<FilterResult>;
  /** "show all" was clicked: the fold ended (its owner unticks its option). */
  ended?(): void;
}

const DEBOUNCE_MS = 200;

export class TreeFilter {
  readonly el: HTMLElement;
  private readonly input: HTMLInputElement;
  private readonly regexBox: HTMLInputElement;
  private readonly namesBox: HTMLInputElement;
  private readonly countEl: HTMLElement;
  private readonly unfoldBtn: HTMLButtonElement;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private seq = 0;
  private fold: TreeFold | null = null;

  constructor(
    private readonly query: (query: string, regex: boolean, names: boolean) => Promise<FilterResult>,
    /** null: no filter (the plain tree again). */
    private readonly onResult: (result: FilterResult | null) => Promise<void>,
  ) {
    this.input = h("input", {
      type: "search",
      class: "tx-filter",
      placeholder: "filter: substring of path or class",
      "aria-label": "Filter modules",
    });
    this.regexBox = h("input", { type: "checkbox" });
    this.namesBox = h("input", { type: "checkbox" });
    this.countEl = h("span", { class: "tx-count", "aria-live": "polite" });
    this.unfoldBtn = h("button", { type: "button", class: "tx-link tx-unfold", hidden: true }, "show all");
    this.unfoldBtn.addEventListener("click", () => {
      const ended = this.fold?.ended;
      void this.setFold(null);
      ended?.();
    });
    this.el = h(
      "div",
      { class: "tx-filterbar" },
      this.input,
      h("label", { class: "tx-regex" }, this.regexBox, "regex"),
      // "attn" matches every child of an attention by its path; its own name leaves them out.
      h("label", { class: "tx-regex tx-names", title: "match each module's own name, not its path or class" }, this.namesBox, "names only"),
      this.countEl,
      this.unfoldBtn,
    );
    this.input.addEventListener("input", () => this.schedule());
    this.regexBox.addEventListener("change", () => this.schedule());
    this.namesBox.addEventListener("change", () => this.schedule());
  }

  set(query: string, regex: boolean): Promise<void> {
    this.input.value = query;
    this.regexBox.checked = regex;
    return this.run();
  }

  /** Folds the tree to `fold`'s rows while the query is empty; null shows the whole tree. */
  setFold(fold: TreeFold | null): Promise<void> {
    this.fold = fold;
    return this.run();
  }

  private schedule(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.run(), DEBOUNCE_MS);
  }

  async run(): Promise<void> {
    const query = this.input.value.trim();
    const seq = ++this.seq;
    const fold = query ? null : this.fold;
    this.countEl.classList.remove("tx-bad");
    this.unfoldBtn.hidden = !fold;
    if (!query && !fold) {
      this.countEl.textContent = "";
      await this.onResult(null);
      return;
    }
    let result: FilterResult;
    try {
      result = fold ? await fold.rows() : await this.query(query, this.regexBox.checked, this.namesBox.checked);
      if (seq !== this.seq) return;
      const n = result.count;
      const what = fold ? `folded to ${fold.label} (${n})` : `${n} match${n === 1 ? "" : "es"}`;
      this.countEl.textContent = `${what}${result.truncated ? " (first shown)" : ""}`;
    } catch (e) {
      if (seq !== this.seq) return;
      result = { count: 0, rows: [], truncated: false };
      this.countEl.textContent = String((e as Error).message ?? e);
      this.countEl.classList.add("tx-bad");
    }
    await this.onResult(result);
  }
}
