// Statistics of the selected module's own weights in the Overview: norm, mean, std,
// min, max, zero and non-finite counts, and a sparkline of the value histogram. Asked for when the
// Overview shows a module (tx.stats reads every value: never for the whole tree at once).
import { clear, formatCount, h, SVG_NS, svgChart } from "../dom";
import type { StatRow } from "../protocol";
import type { Ctx } from "./context";
import { messageOf } from "./context";


const WIDTH = 96;
const HEIGHT = 20;

/** An inline SVG bar chart of `counts`, built with DOM calls (no markup parsed). */
export function sparkline(counts: readonly number[], label: string): SVGSVGElement {
  const svg = svgChart("tx-spark", WIDTH, HEIGHT, label);
  const top = Math.max(1, ...counts);
  const w = counts.length ? WIDTH / counts.length : WIDTH;
  counts.forEach((c, i) => {
    // A bin with any value gets at least a pixel: a lone outlier must stay visible.
    const bh = c > 0 ? Math.max(1, (c / top) * HEIGHT) : 0;
    const rect = document.createElementNS(SVG_NS, "rect");
    rect.setAttribute("x", (i * w).toFixed(2));
    rect.setAttribute("y", (HEIGHT - bh).toFixed(2));
    rect.setAttribute("width", Math.max(0.5, w - 1).toFixed(2));
    rect.setAttribute("height", bh.toFixed(2));
    svg.appendChild(rect);
  });
  return svg;
}

export function num(x: number | null): string {
  if (x === null || x === undefined) return "—";
  const a = Math.abs(x);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return x.toExponential(2);
  return x.toFixed(4);
}

function statRow(r: StatRow): HTMLElement {
  const name = h("td", { title: `${r.shape} ${r.dtype}` }, r.name);
  if (r.skipped) return h("tr", {}, name, h("td", { colspan: 8, class: "tx-muted" }, r.skipped));
  const bad = r.nonfinite > 0;
  return h("tr", { class: bad ? "tx-nonfinite-row" : undefined },
    name,
    h("td", {}, sparkline(r.hist, `histogram of ${r.name} from ${num(r.min)} to ${num(r.max)}`)),
    h("td", { class: "tx-num" }, num(r.norm)),
    h("td", { class: "tx-num" }, num(r.mean)),
    h("td", { class: "tx-num" }, num(r.std)),
    h("td", { class: "tx-num" }, num(r.min)),
    h("td", { class: "tx-num" }, num(r.max)),
    h("td", { class: "tx-num" }, formatCount(r.zeros)),
    h("td", { class: `tx-num${bad ? " tx-bad" : ""}` }, r.nonfinite.toLocaleString()));
}

/** The "weights" section of the Overview for `path`; filled when the kernel answers. */
export function statsSection(ctx: Ctx, path: string): HTMLElement {
  const box = h("div", { class: "tx-stats" }, h("h4", {}, "weights (own)"));
  if (ctx.readonly) return h("div");
  const body = h("p", { class: "tx-muted" }, "reading values…");
  box.appendChild(body);
  ctx.rpc.call({ kind: "stats", path }).then(
    (r) => {
      if (!r.rows.length) {
        box.remove(); // a container: its weights are its children's
        return;
      }
      const table = h("table", { class: "tx-table tx-stattable" },
        h("thead", {}, h("tr", {}, ...["tensor", "histogram", "norm", "mean", "std", "min", "max", "zeros", "NaN/Inf"].map((t) => h("th", {}, t)))),
        h("tbody", {}, ...r.rows.map(statRow)));
      body.replaceWith(table);
    },
    (e) => {
      clear(body);
      body.textContent = messageOf(e);
    },
  );
  return box;
}
