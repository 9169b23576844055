// "Show summary" as a table that fits the pane: torchinfo's text lays its columns out in spaces,
// 120 characters wide, which put Param # past the pane's right edge (issue 43). The text stays
// what Copy gives; shown, its columns become cells that wrap (a layer before its class, outputs
// between entries) and Param # stays in view. The columns are read where the header line names
// them (_summary/text.py pads every row to them); text in another layout is shown as it is.
import { h } from "../dom";

export interface SummaryRow {
  label: string; // the tree prefix and layer, "│ ├─conv1 (Conv2d)"
  outputs: string[]; // one entry a line ("logits: [1, 16, 128]"); empty without a probe
  params: string;
}

export interface SummaryGrid {
  before: string[]; // the title line(s) above the table
  outputs: boolean; // whether there is an Output shape column (a probe gave the shapes)
  rows: SummaryRow[];
  after: string[]; // totals, sizes and notes
}

const RULE = /^=+$/;
const PREFIX_ONLY = /^[│ ]*$/;

/** The summary text's table as rows, or null where the text has not torchinfo's layout. */
export function parseSummary(text: string): SummaryGrid | null {
  const lines = text.split("\n");
  const at = lines.findIndex((l) => l.startsWith("Layer (type)"));
  if (at < 1 || !RULE.test(lines[at - 1]) || !RULE.test(lines[at + 1] ?? "")) return null;
  const head = lines[at];
  const shapeAt = head.indexOf("Output shape");
  const paramsAt = head.indexOf("Param #");
  if (paramsAt < 0) return null;
  const labelEnd = shapeAt >= 0 ? shapeAt : paramsAt;
  const rows: SummaryRow[] = [];
  let i = at + 2;
  for (; i < lines.length && !RULE.test(lines[i]); i++) {
    const line = lines[i];
    const label = line.slice(0, labelEnd).trimEnd();
    const shape = shapeAt >= 0 ? line.slice(shapeAt, paramsAt).trim() : "";
    const params = line.slice(paramsAt).trim();
    const last = rows[rows.length - 1];
    // A row's further outputs come on lines of their own, under its tree prefix.
    if (last && !params && PREFIX_ONLY.test(label)) {
      if (shape) last.outputs.push(shape);
      continue;
    }
    rows.push({ label, outputs: shape ? [shape] : [], params });
  }
  if (i >= lines.length) return null;
  return { before: lines.slice(0, at - 1), outputs: shapeAt >= 0, rows, after: lines.slice(i + 1) };
}

/** The layer cell: the tree prefix and name in one piece, the class after a possible break. */
function labelCell(label: string): HTMLTableCellElement {
  const at = label.indexOf(" (");
  const parts = at < 0 ? [label] : [label.slice(0, at), label.slice(at + 1)];
  const td = h("td", { class: "tx-mono tx-sumlabel", title: label.replace(/^[│ ├└─]+/, "") });
  parts.forEach((p, i) => {
    if (i) td.append(" ");
    td.append(h("span", { class: "tx-nobr" }, p));
  });
  return td;
}

/** The summary as it is shown: the title, the table, then totals and notes as text. */
export function summaryView(grid: SummaryGrid): HTMLElement {
  const head = ["Layer (type)", ...(grid.outputs ? ["Output shape"] : []), "Param #"];
  const body = h("tbody");
  for (const r of grid.rows) {
    const tr = h("tr", {}, labelCell(r.label));
    if (grid.outputs) {
      const td = h("td", { class: "tx-mono tx-sumshapes" });
      r.outputs.forEach((o, i) => {
        if (i) td.append(h("br"));
        td.append(h("span", { class: "tx-nobr" }, o));
      });
      tr.append(td);
    }
    tr.append(h("td", { class: "tx-mono tx-sumparams" }, r.params));
    body.append(tr);
  }
  const table = h(
    "table",
    { class: "tx-table tx-summarytable", "aria-label": "summary" },
    h("thead", {}, h("tr", {}, ...head.map((x) => h("th", { class: x === "Param #" ? "tx-sumparams" : undefined }, x)))),
    body,
  );
  return h(
    "div",
    { class: "tx-summaryview" },
    h("div", { class: "tx-pre tx-sumtitle" }, grid.before.join("\n")),
    table,
    h("div", { class: "tx-pre tx-sumafter" }, grid.after.filter((l) => !RULE.test(l)).join("\n")),
  );
}
