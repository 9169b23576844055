// The Probe table's cells that have to fit a narrow pane (issue 43): a module is its last name,
// indented under its parent (the rows come in the tree's order), never a path cut between two
// lines; a cell of several outputs is one line, the first and "+N more", which opens in place.
import { breakable, h } from "../dom";

/** How deep a path sits: "" (the model) 0, "blocks" 1, "blocks.0.conv" 3. */
export function pathDepth(path: string): number {
  return path === "" ? 0 : path.split(".").length;
}

/** The last part of a path, "(model)" for the model itself. */
export function lastName(path: string): string {
  return path === "" ? "(model)" : path.slice(path.lastIndexOf(".") + 1);
}

/** A shapes cell's entries ("logits: 1×10, past_key_values[0][0]: 1×4×8" or "1×3, 1×8"), as the
 * kernel joins them (_view/panes.py output_parts). */
export function entries(text: string): string[] {
  return text === "" ? [] : text.split(", ");
}

/** The module cell: the name at its depth; the whole path is its title and accessible name, so a
 * row reads "layer1.0.conv1" to a screen reader and in the tooltip. */
export function pathCell(path: string, shown = lastName(path), full = path || "(model)"): HTMLTableCellElement {
  const name = h("span", { class: "tx-pathname" }, shown);
  // Top-level modules start at the edge: the model's own row is the only one above them.
  name.style.setProperty("--tx-depth", String(Math.max(0, pathDepth(path) - 1)));
  return h("td", { class: "tx-pathcell", title: `${full} (click to select it in the tree)`, "aria-label": full }, name);
}

/** A shapes cell: whole shapes only, broken between entries (dom.ts breakable); several entries
 * show the first and a "+N more" button that lists them all, one a line (and "less" to fold
 * them again). */
export function shapesCell(text: string): HTMLTableCellElement {
  const td = h("td", { class: "tx-wrap tx-mono tx-shapes" });
  const all = entries(text);
  if (all.length <= 1) {
    td.append(...breakable(text));
    return td;
  }
  td.title = all.join("\n");
  const draw = (open: boolean) => {
    // Inline text, not a <button> (an inline block, a line of its own when the column is
    // narrow), held to the last shape by a no-break space: the row stays one line high.
    // Opened, one entry a line: a list of names reads down, not as one wrapped run.
    const shown = open ? all.flatMap((e, i) => [...(i ? [h("br")] : []), ...breakable(e)]) : breakable(all[0]);
    td.replaceChildren(...shown, "\u00a0");
    const label = open ? "less" : `+${all.length - 1} more`;
    const b = h("span", { role: "button", tabindex: 0, class: "tx-more", "aria-expanded": String(open) }, label);
    const flip = (e: Event) => {
      e.stopPropagation(); // the row's own click selects the module
      e.preventDefault();
      draw(!open);
      td.querySelector<HTMLElement>(".tx-more")?.focus();
    };
    b.addEventListener("click", flip);
    b.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") flip(e);
    });
    td.appendChild(b);
  };
  draw(false);
  return td;
}

/** The class cell: a long class name may break between the words of its name
 * ("LlamaRotary" / "Embedding"), never inside one, so a narrow pane keeps its columns. */
export function classCell(cls: string): HTMLTableCellElement {
  const td = h("td", { class: "tx-clscell" });
  cls.split(/(?<=[a-z0-9])(?=[A-Z])/).forEach((word, i) => {
    if (i) td.appendChild(document.createElement("wbr"));
    td.append(word);
  });
  return td;
}
